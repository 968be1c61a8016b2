/* Optional C twins of measure's per-group order statistics (steps.py, tokens.py).

   The NumPy functions stay the reference; these give the same values without sorting a
   whole column to read a few order statistics per group. Each groups its rows with one
   counting sort (a count, then a stable scatter), then reads the ranks each group needs
   with a selection: O(n) where the references sort (O(n log n)).

   - step_finishes: steps._finishes_by_step + the loop of steps._step_finishes, returning
     the two order statistics stats._ranks names for q; the lerp stays in Python, so the
     floating-point figure comes from the same code as the reference's.
   - group_starts: steps.group_starts' per-group arrays, in one pass instead of a mask a group.
   - group_medians: tokens._per_turn's grouping and tokens._median's two middle order statistics.

   Subtractions wrap as NumPy's int64 ones do (done in uint64: signed overflow is undefined in C).
   The GIL is released around the row loops: measure runs its passes on threads. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- selection ---------------------------------------------------------------------- */

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void
insertion_sort(int64_t *a, Py_ssize_t n)
{
    for (Py_ssize_t i = 1; i < n; i++) {
        int64_t v = a[i];
        Py_ssize_t j = i;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
}

static int64_t
median3(int64_t a, int64_t b, int64_t c)
{
    if (a < b)
        return b < c ? b : (a < c ? c : a);
    return a < c ? a : (b < c ? c : b);
}

/* Reorders a[0..n) so that a[k] is its k-th smallest, nothing after it smaller and nothing
   before it larger. Quickselect with a three-way partition (all-equal and tied values end in
   one pass); past a budget of rounds (an adversarial order) the rest is sorted: O(n log n) at worst. */
static void
select_kth(int64_t *a, Py_ssize_t n, Py_ssize_t k)
{
    Py_ssize_t lo = 0, hi = n;
    int budget = 64;
    while (hi - lo > 16) {
        if (budget-- == 0) {
            qsort(a + lo, (size_t)(hi - lo), sizeof(int64_t), cmp_i64);
            return;
        }
        int64_t p = median3(a[lo], a[lo + (hi - lo) / 2], a[hi - 1]);
        Py_ssize_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            int64_t v = a[i];
            if (v < p) {
                a[i++] = a[lt];
                a[lt++] = v;
            }
            else if (v > p) {
                a[i] = a[--gt];
                a[gt] = v;
            }
            else
                i++;
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return;
    }
    insertion_sort(a + lo, hi - lo);
}

/* The lo-th and hi-th smallest of a[0..n) (hi is lo or lo + 1); a is reordered. */
static void
two_ranks(int64_t *a, Py_ssize_t n, Py_ssize_t lo, Py_ssize_t hi, int64_t *lo_value, int64_t *hi_value)
{
    select_kth(a, n, lo);
    *lo_value = a[lo];
    if (hi == lo) {
        *hi_value = a[lo];
        return;
    }
    int64_t m = a[lo + 1];  /* the next order statistic is the least of what follows */
    for (Py_ssize_t i = lo + 2; i < n; i++)
        if (a[i] < m)
            m = a[i];
    *hi_value = m;
}

/* ---- arguments ---------------------------------------------------------------------- */

static PyArrayObject *
int64_array(PyObject *obj, const char *what)
{
    PyArrayObject *arr = (PyArrayObject *)PyArray_FROMANY(obj, NPY_INT64, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (arr == NULL)
        PyErr_Format(PyExc_TypeError, "%s must be a one-dimensional integer array", what);
    return arr;
}

/* A one-dimensional array of codes of any integer type, read as they are (no int64 copy). */
static PyArrayObject *
code_array(PyObject *obj, const char *what)
{
    PyArrayObject *arr = (PyArrayObject *)PyArray_FROMANY(obj, NPY_NOTYPE, 1, 1, NPY_ARRAY_IN_ARRAY);
    if (arr == NULL)
        return NULL;
    if (!PyArray_ISINTEGER(arr) || PyArray_ITEMSIZE(arr) > 8) {
        PyErr_Format(PyExc_TypeError, "%s must be a one-dimensional integer array", what);
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* Runs the statements after `c` for each code of an integer array, as int64 `c` (unsigned 64-bit
   codes past INT64_MAX turn negative: no group). One loop a type, so the type is chosen once. */
#define CODE_LOOP(T, data, n, c, ...)                                                      \
    {                                                                                      \
        const T *codes_ = (const T *)(data);                                               \
        for (Py_ssize_t i_ = 0; i_ < (n); i_++) {                                          \
            int64_t c = (int64_t)codes_[i_];                                               \
            __VA_ARGS__                                                                    \
        }                                                                                  \
    }
#define FOR_EACH_CODE(arr, n, c, ...)                                                      \
    do {                                                                                   \
        const void *data_ = PyArray_DATA(arr);                                             \
        int signed_ = PyArray_ISSIGNED(arr);                                               \
        switch (PyArray_ITEMSIZE(arr)) {                                                   \
        case 1:                                                                            \
            if (signed_) CODE_LOOP(int8_t, data_, n, c, __VA_ARGS__)                       \
            else CODE_LOOP(uint8_t, data_, n, c, __VA_ARGS__)                              \
            break;                                                                         \
        case 2:                                                                            \
            if (signed_) CODE_LOOP(int16_t, data_, n, c, __VA_ARGS__)                      \
            else CODE_LOOP(uint16_t, data_, n, c, __VA_ARGS__)                             \
            break;                                                                         \
        case 4:                                                                            \
            if (signed_) CODE_LOOP(int32_t, data_, n, c, __VA_ARGS__)                      \
            else CODE_LOOP(uint32_t, data_, n, c, __VA_ARGS__)                             \
            break;                                                                         \
        default:                                                                           \
            if (signed_) CODE_LOOP(int64_t, data_, n, c, __VA_ARGS__)                      \
            else CODE_LOOP(uint64_t, data_, n, c, __VA_ARGS__)                             \
        }                                                                                  \
    } while (0)

static PyArrayObject *
new_int64(Py_ssize_t n)
{
    npy_intp dims[1] = {n};
    return (PyArrayObject *)PyArray_ZEROS(1, dims, NPY_INT64, 0);
}

static inline int64_t
wrapping_sub(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* ---- step finishes ------------------------------------------------------------------ */

/* Index of the last first[] at or before x (first ascending), or -1: how many are at or
   before x, less one, by a branch-free binary search (rows come in no order). */
static inline Py_ssize_t
step_of(const int64_t *first, Py_ssize_t n_steps, int64_t x)
{
    Py_ssize_t base = 0, n = n_steps;
    while (n > 1) {
        Py_ssize_t half = n / 2;
        base = first[base + half] <= x ? base + half : base;
        n -= half;
    }
    return base + (first[base] <= x) - 1;
}

/* Finds a row's step in O(1) on the whole: the span of first starts cut into about 4 buckets
   a step (a power-of-two width), each bucket knowing the steps of its start and of the next
   bucket's, and a binary search between those two (one or two steps, unless steps crowd). */
typedef struct {
    const int64_t *first;
    Py_ssize_t n_steps;
    int shift;
    size_t n_buckets;
    uint32_t *table;  /* n_buckets + 1 */
} StepFinder;

static int
finder_init(StepFinder *f, const int64_t *first, Py_ssize_t n_steps)
{
    uint64_t span = (uint64_t)first[n_steps - 1] - (uint64_t)first[0];
    f->first = first;
    f->n_steps = n_steps;
    f->shift = 0;
    while ((span >> f->shift) >= 4 * (uint64_t)n_steps)
        f->shift++;
    f->n_buckets = (size_t)(span >> f->shift) + 1;
    f->table = malloc((f->n_buckets + 1) * sizeof(uint32_t));
    if (f->table == NULL)
        return -1;
    Py_ssize_t g = 0;
    for (size_t b = 0; b < f->n_buckets; b++) {
        int64_t at = (int64_t)((uint64_t)first[0] + ((uint64_t)b << f->shift));  /* <= first[-1] */
        while (g + 1 < n_steps && first[g + 1] <= at)
            g++;
        f->table[b] = (uint32_t)g;
    }
    f->table[f->n_buckets] = (uint32_t)(n_steps - 1);
    return 0;
}

static inline Py_ssize_t
finder_step(const StepFinder *f, int64_t x)
{
    if (x < f->first[0])
        return -1;
    size_t b = (size_t)(((uint64_t)x - (uint64_t)f->first[0]) >> f->shift);
    if (b >= f->n_buckets)
        b = f->n_buckets - 1;
    Py_ssize_t lo = f->table[b], hi = f->table[b + 1];  /* first[lo] <= x; the answer is in lo..hi */
    return lo + step_of(f->first + lo, hi - lo + 1, x);
}

/* Counts and stable scatter of finish - first[step] by step; offsets[n_steps + 1]. Returns
   0, -1 when a row starts before first[0] (no step), -2 out of memory. */
static int
scatter_by_step(const int64_t *start, const int64_t *finish, Py_ssize_t n, const int64_t *first,
                Py_ssize_t n_steps, uint32_t *label, int64_t *offsets, int64_t *rel)
{
    StepFinder finder;
    if (finder_init(&finder, first, n_steps) < 0)
        return -2;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t g = finder_step(&finder, start[i]);
        if (g < 0) {
            free(finder.table);
            return -1;
        }
        label[i] = (uint32_t)g;
        offsets[g + 1]++;
    }
    free(finder.table);
    for (Py_ssize_t g = 0; g < n_steps; g++)
        offsets[g + 1] += offsets[g];
    int64_t *at = malloc((size_t)n_steps * sizeof(int64_t));
    if (at == NULL)
        return -2;
    memcpy(at, offsets, (size_t)n_steps * sizeof(int64_t));
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t g = label[i];
        rel[at[g]++] = wrapping_sub(finish[i], first[g]);
    }
    free(at);
    return 0;
}

static PyObject *
step_finishes(PyObject *self, PyObject *args)
{
    PyObject *start_obj, *finish_obj, *first_obj;
    double q;
    if (!PyArg_ParseTuple(args, "OOOd:step_finishes", &start_obj, &finish_obj, &first_obj, &q))
        return NULL;
    PyArrayObject *start_a = int64_array(start_obj, "start_us");
    PyArrayObject *finish_a = start_a ? int64_array(finish_obj, "finish_us") : NULL;
    PyArrayObject *first_a = finish_a ? int64_array(first_obj, "first_us") : NULL;
    PyArrayObject *sizes = NULL, *maxes = NULL, *lows = NULL, *highs = NULL, *carried = NULL;
    PyObject *result = NULL;
    int64_t *rel = NULL;
    uint32_t *label = NULL;
    if (first_a == NULL)
        goto done;
    Py_ssize_t n = PyArray_SIZE(start_a), n_steps = PyArray_SIZE(first_a);
    if (PyArray_SIZE(finish_a) != n || n_steps < 1 || (uint64_t)n_steps > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "step_finishes: starts and finishes of one length, 1 to 2**32 steps");
        goto done;
    }
    sizes = new_int64(n_steps + 1);
    maxes = new_int64(n_steps);
    lows = new_int64(n_steps);
    highs = new_int64(n_steps);
    carried = new_int64(n_steps - 1);
    rel = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    label = malloc((size_t)(n ? n : 1) * sizeof(uint32_t));
    if (!sizes || !maxes || !lows || !highs || !carried || !rel || !label) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    const int64_t *start = PyArray_DATA(start_a), *finish = PyArray_DATA(finish_a), *first = PyArray_DATA(first_a);
    int64_t *offsets = PyArray_DATA(sizes), *mx = PyArray_DATA(maxes), *lo_v = PyArray_DATA(lows);
    int64_t *hi_v = PyArray_DATA(highs), *carry = PyArray_DATA(carried);
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = scatter_by_step(start, finish, n, first, n_steps, label, offsets, rel);
    free(label);
    label = NULL;
    for (Py_ssize_t g = 0; status == 0 && g < n_steps; g++) {
        int64_t *part = rel + offsets[g];
        Py_ssize_t size = (Py_ssize_t)(offsets[g + 1] - offsets[g]);
        if (size == 0) {
            status = -3;
            break;
        }
        int64_t m = part[0];
        for (Py_ssize_t i = 1; i < size; i++)
            if (part[i] > m)
                m = part[i];
        mx[g] = m;
        if (g + 1 < n_steps) {  /* still running when the next step's first start comes */
            int64_t open = wrapping_sub(first[g + 1], first[g]);
            int64_t c = 0;
            for (Py_ssize_t i = 0; i < size; i++)
                c += part[i] > open;
            carry[g] = c;
        }
        /* stats._ranks: the same double arithmetic */
        double pos = (double)(size - 1) * q;
        Py_ssize_t lo = (Py_ssize_t)floor(pos);
        Py_ssize_t hi = lo + 1 < size - 1 ? lo + 1 : size - 1;
        two_ranks(part, size, lo, hi, &lo_v[g], &hi_v[g]);
    }
    Py_END_ALLOW_THREADS
    if (status == -1)
        PyErr_SetString(PyExc_ValueError, "step_finishes: a row starts before the first step");
    else if (status == -2)
        PyErr_NoMemory();
    else if (status == -3)
        PyErr_SetString(PyExc_ValueError, "step_finishes: a step without rows");
    else
        result = Py_BuildValue("OOOOO", sizes, maxes, lows, highs, carried);
done:
    free(rel);
    free(label);
    Py_XDECREF(start_a);
    Py_XDECREF(finish_a);
    Py_XDECREF(first_a);
    Py_XDECREF(sizes);
    Py_XDECREF(maxes);
    Py_XDECREF(lows);
    Py_XDECREF(highs);
    Py_XDECREF(carried);
    return result;
}

/* ---- per-group starts --------------------------------------------------------------- */

static PyObject *
group_starts(PyObject *self, PyObject *args)
{
    PyObject *values_obj, *part_obj;
    Py_ssize_t n_groups;
    if (!PyArg_ParseTuple(args, "OOn:group_starts", &values_obj, &part_obj, &n_groups))
        return NULL;
    if (n_groups < 0) {
        PyErr_SetString(PyExc_ValueError, "group_starts: n_groups < 0");
        return NULL;
    }
    PyArrayObject *values_a = int64_array(values_obj, "s_all");
    PyArrayObject *part_a = values_a ? code_array(part_obj, "part") : NULL;
    PyArrayObject *offsets_a = NULL, *grouped_a = NULL;
    PyObject *result = NULL;
    if (part_a == NULL)
        goto done;
    Py_ssize_t n = PyArray_SIZE(values_a);
    if (PyArray_SIZE(part_a) != n) {
        PyErr_SetString(PyExc_ValueError, "group_starts: values and parts of one length");
        goto done;
    }
    offsets_a = new_int64(n_groups + 1);
    if (offsets_a == NULL)
        goto done;
    const int64_t *values = PyArray_DATA(values_a);
    int64_t *offsets = PyArray_DATA(offsets_a);
    Py_BEGIN_ALLOW_THREADS
    /* part g + 1 is group g; 0 and past n_groups: none */
    FOR_EACH_CODE(part_a, n, c, if (c >= 1 && c <= n_groups) offsets[c]++;);
    for (Py_ssize_t g = 0; g < n_groups; g++)
        offsets[g + 1] += offsets[g];
    Py_END_ALLOW_THREADS
    grouped_a = new_int64((Py_ssize_t)offsets[n_groups]);
    int64_t *at = malloc((size_t)(n_groups ? n_groups : 1) * sizeof(int64_t));
    if (grouped_a == NULL || at == NULL) {
        free(at);
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    int64_t *grouped = PyArray_DATA(grouped_a);
    Py_BEGIN_ALLOW_THREADS
    memcpy(at, offsets, (size_t)n_groups * sizeof(int64_t));
    const int64_t *value = values;
    FOR_EACH_CODE(part_a, n, c, if (c >= 1 && c <= n_groups) grouped[at[c - 1]++] = *value; value++;);
    free(at);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("OO", grouped_a, offsets_a);
done:
    Py_XDECREF(values_a);
    Py_XDECREF(part_a);
    Py_XDECREF(offsets_a);
    Py_XDECREF(grouped_a);
    return result;
}

/* ---- per-group medians -------------------------------------------------------------- */

static PyObject *
group_medians(PyObject *self, PyObject *args)
{
    PyObject *codes_obj, *values_obj;
    Py_ssize_t n_groups;
    if (!PyArg_ParseTuple(args, "OOn:group_medians", &codes_obj, &values_obj, &n_groups))
        return NULL;
    if (n_groups < 0) {
        PyErr_SetString(PyExc_ValueError, "group_medians: n_groups < 0");
        return NULL;
    }
    PyArrayObject *codes_a = code_array(codes_obj, "codes");
    PyArrayObject *values_a = codes_a ? int64_array(values_obj, "values") : NULL;
    PyArrayObject *offsets_a = NULL, *lows = NULL, *highs = NULL;
    PyObject *result = NULL;
    int64_t *buf = NULL, *at = NULL;
    if (values_a == NULL)
        goto done;
    Py_ssize_t n = PyArray_SIZE(codes_a);
    if (PyArray_SIZE(values_a) != n) {
        PyErr_SetString(PyExc_ValueError, "group_medians: codes and values of one length");
        goto done;
    }
    offsets_a = new_int64(n_groups + 1);
    lows = new_int64(n_groups);
    highs = new_int64(n_groups);
    buf = malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    at = malloc((size_t)(n_groups ? n_groups : 1) * sizeof(int64_t));
    if (!offsets_a || !lows || !highs || !buf || !at) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    const int64_t *values = PyArray_DATA(values_a);
    int64_t *offsets = PyArray_DATA(offsets_a), *lo_v = PyArray_DATA(lows), *hi_v = PyArray_DATA(highs);
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    FOR_EACH_CODE(codes_a, n, c, if (c < 0 || c >= n_groups) { bad = 1; break; } offsets[c + 1]++;);
    if (!bad) {
        for (Py_ssize_t g = 0; g < n_groups; g++)
            offsets[g + 1] += offsets[g];
        memcpy(at, offsets, (size_t)n_groups * sizeof(int64_t));
        const int64_t *value = values;
        FOR_EACH_CODE(codes_a, n, c, buf[at[c]++] = *value++;);
        for (Py_ssize_t g = 0; g < n_groups; g++) {
            Py_ssize_t size = (Py_ssize_t)(offsets[g + 1] - offsets[g]);
            if (size == 0)
                continue;
            /* tokens._median: the two middle order statistics, one when the count is odd */
            Py_ssize_t lo = (size - 1) / 2, hi = (size - 1) % 2 ? lo + 1 : lo;
            two_ranks(buf + offsets[g], size, lo, hi, &lo_v[g], &hi_v[g]);
        }
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "group_medians: a code outside 0..n_groups-1");
    else
        result = Py_BuildValue("OOO", offsets_a, lows, highs);
done:
    free(buf);
    free(at);
    Py_XDECREF(codes_a);
    Py_XDECREF(values_a);
    Py_XDECREF(offsets_a);
    Py_XDECREF(lows);
    Py_XDECREF(highs);
    return result;
}

static PyMethodDef methods[] = {
    {"step_finishes", step_finishes, METH_VARARGS,
     "step_finishes(start_us, finish_us, first_us, q) -> (offsets, max, lower, upper, carried).\n\n"
     "Rows by step (the last first_us at or before their start); per step the offsets of its rows,\n"
     "the largest finish - first start, the order statistics stats._ranks(size, q) names, and (all\n"
     "but the last) how many exceed the next first start - this one."},
    {"group_starts", group_starts, METH_VARARGS,
     "group_starts(s_all, part, n_groups) -> (grouped, offsets): the values with part g + 1 for\n"
     "each group g, in their order, group after group."},
    {"group_medians", group_medians, METH_VARARGS,
     "group_medians(codes, values, n_groups) -> (offsets, lower, upper): per group the two middle\n"
     "order statistics of its values (the same one twice for an odd count)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_select", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__select(void)
{
    import_array();
    return PyModule_Create(&module);
}

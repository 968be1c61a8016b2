/* Optional C twins of measure's grouped counts and sums and of the grouped sweep.

   Built at install when a C compiler is present (setup.py, optional=True); without it the
   NumPy functions run instead, and they stay the reference: groups.reference_group_columns
   (group_totals); concurrency._packed_events with the bincount and _group_hold_sums of
   grouped_sweeps (pack_events); concurrency._compact, overall and per group as grouped_sweeps'
   loop makes it (compact); concurrency._reference_area (area); time_at_level's bincount
   (level_durations). Each twin is one pass where the reference makes one NumPy pass per
   figure or per group, each with row-sized temporaries.

   Sums are exact: every partial sum is an __int128 (no row count or int64 value can carry
   it past 2**127), returned as a Python int. Inputs and outputs are caller-owned buffers
   (NumPy arrays), so no NumPy headers are needed. The GIL is released in the loops. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef __int128 wide;

/* What a buffer must hold: an integer of one of these sizes, or a bool. */
enum kind { ANY_INT, INT64_ONLY, LEVEL_INT, BOOL };

/* A C-contiguous one-dimensional buffer of `kind`; `what` names the argument in errors. */
static int
get_buffer(PyObject *obj, Py_buffer *view, int writable, enum kind kind, const char *fn, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    const char *fmt = view->format ? view->format : "B";
    if (*fmt == '@' || *fmt == '=')
        fmt++;
#if PY_LITTLE_ENDIAN
    else if (*fmt == '<')
        fmt++;
#else
    else if (*fmt == '>' || *fmt == '!')
        fmt++;
#endif
    int ok = fmt[0] != '\0' && fmt[1] == '\0' && view->ndim <= 1;
    if (ok) {
        int is_signed = strchr("bhilq", fmt[0]) != NULL, is_unsigned = strchr("BHILQ", fmt[0]) != NULL;
        switch (kind) {
        case ANY_INT:  /* group codes: uint8 (the sweep's) or int32 / int64 (Codes') */
            ok = (is_unsigned && view->itemsize == 1) || (is_signed && (view->itemsize == 4 || view->itemsize == 8));
            break;
        case INT64_ONLY:
            ok = is_signed && view->itemsize == 8;
            break;
        case LEVEL_INT:
            ok = is_signed && (view->itemsize == 4 || view->itemsize == 8);
            break;
        case BOOL:
            ok = fmt[0] == '?' && view->itemsize == 1;
            break;
        }
    }
    if (!ok) {
        static const char *names[] = {"uint8, int32 or int64", "int64", "int32 or int64", "bool"};
        PyErr_Format(PyExc_TypeError, "%s: %s must be a one-dimensional %s array", fn, what, names[kind]);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* Group code of row i: the three code dtypes callers pass, chosen outside the loop by the
   compiler (the switch is loop-invariant). */
static inline int64_t
code_at(const void *codes, Py_ssize_t itemsize, Py_ssize_t i)
{
    switch (itemsize) {
    case 1:
        return ((const uint8_t *)codes)[i];
    case 4:
        return ((const int32_t *)codes)[i];
    default:
        return ((const int64_t *)codes)[i];
    }
}

static PyObject *
wide_to_long(wide v)
{
    if (v >= INT64_MIN && v <= INT64_MAX)
        return PyLong_FromLongLong((long long)v);
    /* v = high * 2**64 + low, high floored (arithmetic shift), low unsigned. */
    PyObject *high = PyLong_FromLongLong((long long)(v >> 64));
    PyObject *low = PyLong_FromUnsignedLongLong((unsigned long long)(uint64_t)v);
    PyObject *sixty_four = PyLong_FromLong(64);
    PyObject *shifted = NULL, *out = NULL;
    if (high && low && sixty_four && (shifted = PyNumber_Lshift(high, sixty_four)))
        out = PyNumber_Add(shifted, low);
    Py_XDECREF(high);
    Py_XDECREF(low);
    Py_XDECREF(sixty_four);
    Py_XDECREF(shifted);
    return out;
}

/* A list of n Python ints from int64 counts (wide == NULL) or from __int128 sums. */
static PyObject *
int_list(const int64_t *counts, const wide *sums, Py_ssize_t n)
{
    PyObject *list = PyList_New(n);
    if (!list)
        return NULL;
    for (Py_ssize_t g = 0; g < n; g++) {
        PyObject *v = sums ? wide_to_long(sums[g]) : PyLong_FromLongLong(counts[g]);
        if (!v) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, g, v);
    }
    return list;
}

#define TOTAL_COUNTS 6
#define TOTAL_SUMS 4

PyDoc_STRVAR(group_totals_doc,
"group_totals(codes, n_groups, hold_us, flag_valid, flag_value, rewarded, passed, tokens,\n"
"             input_tokens, output_tokens)\n"
"\n"
"The ten columns of ``groups.group_columns`` for rows with group ``codes`` (0..n_groups-1),\n"
"as ten lists of ints, one int per group: rows, sum of hold_us, rows with flag_valid, rows\n"
"with flag_valid and flag_value (exceptions), rewarded, passed, tokens rows, and the sums of\n"
"hold_us, input_tokens and output_tokens over the tokens rows. Token values are read only\n"
"where ``tokens`` holds (elsewhere they may be junk). Sums are exact. A code outside\n"
"0..n_groups-1 is a ValueError.");

static PyObject *
group_totals(PyObject *self, PyObject *args)
{
    PyObject *objs[9];
    Py_ssize_t n_groups;
    Py_buffer b[9];
    int nbuf = 0;
    PyObject *result = NULL;
    int64_t *counts = NULL;
    wide *sums = NULL;
    static const char *what[9] = {"codes", "hold_us", "flag_valid", "flag_value", "rewarded", "passed",
                                  "tokens", "input_tokens", "output_tokens"};
    static const enum kind kinds[9] = {ANY_INT, INT64_ONLY, BOOL, BOOL, BOOL, BOOL, BOOL, INT64_ONLY, INT64_ONLY};

    if (!PyArg_ParseTuple(args, "OnOOOOOOOO:group_totals", &objs[0], &n_groups, &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &objs[8]))
        return NULL;
    if (n_groups < 0) {
        PyErr_SetString(PyExc_ValueError, "group_totals: n_groups must be >= 0");
        return NULL;
    }
    for (int k = 0; k < 9; k++) {
        if (get_buffer(objs[k], &b[k], 0, kinds[k], "group_totals", what[k]) < 0)
            goto done;
        nbuf++;
    }
    Py_ssize_t n = b[0].len / b[0].itemsize;
    for (int k = 1; k < 9; k++) {
        if (b[k].len / b[k].itemsize != n) {
            PyErr_Format(PyExc_ValueError, "group_totals: %s has %zd rows, codes %zd", what[k],
                         b[k].len / b[k].itemsize, n);
            goto done;
        }
    }
    counts = PyMem_Calloc((size_t)(n_groups ? n_groups : 1) * TOTAL_COUNTS, sizeof(int64_t));
    sums = PyMem_Calloc((size_t)(n_groups ? n_groups : 1) * TOTAL_SUMS, sizeof(wide));
    if (!counts || !sums) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t bad = -1;
    {
        const void *codes = b[0].buf;
        Py_ssize_t code_size = b[0].itemsize;
        const int64_t *hold = b[1].buf, *tok_in = b[7].buf, *tok_out = b[8].buf;
        const char *flag_valid = b[2].buf, *flag_value = b[3].buf, *rewarded = b[4].buf,
                   *passed = b[5].buf, *tok = b[6].buf;
        /* Column-major per figure: counts[f * n_groups + g], so each column is one list. */
        int64_t *rows = counts, *flagged = counts + n_groups, *exc = counts + 2 * n_groups,
                *rew = counts + 3 * n_groups, *pas = counts + 4 * n_groups, *tok_rows = counts + 5 * n_groups;
        wide *hold_sum = sums, *tok_us = sums + n_groups, *in_sum = sums + 2 * n_groups,
             *out_sum = sums + 3 * n_groups;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t g = code_at(codes, code_size, i);
            if (g < 0 || g >= n_groups) {
                bad = i;
                break;
            }
            rows[g] += 1;
            hold_sum[g] += hold[i];
            flagged[g] += flag_valid[i] != 0;
            exc[g] += (flag_valid[i] != 0) & (flag_value[i] != 0);
            rew[g] += rewarded[i] != 0;
            pas[g] += passed[i] != 0;
            if (tok[i]) {
                tok_rows[g] += 1;
                tok_us[g] += hold[i];
                in_sum[g] += tok_in[i];
                out_sum[g] += tok_out[i];
            }
        }
        Py_END_ALLOW_THREADS
    }
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "group_totals: codes[%zd] = %lld is not in 0..%zd", bad,
                     (long long)code_at(b[0].buf, b[0].itemsize, bad), n_groups - 1);
        goto done;
    }
    result = PyList_New(TOTAL_COUNTS + TOTAL_SUMS);
    if (!result)
        goto done;
    /* groups.group_columns' order: rows, sandbox_us, flagged, exc, rewarded, passed, tok_rows,
       tok_us, tok_in, tok_out. */
    static const int order_is_sum[10] = {0, 1, 0, 0, 0, 0, 0, 1, 1, 1};
    static const int order_index[10] = {0, 0, 1, 2, 3, 4, 5, 1, 2, 3};
    for (int c = 0; c < 10; c++) {
        PyObject *col = order_is_sum[c] ? int_list(NULL, sums + order_index[c] * n_groups, n_groups)
                                        : int_list(counts + order_index[c] * n_groups, NULL, n_groups);
        if (!col) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, c, col);
    }
done:
    PyMem_Free(counts);
    PyMem_Free(sums);
    while (nbuf > 0)
        PyBuffer_Release(&b[--nbuf]);
    return result;
}

/* One compaction's output: its times and levels, how many written, its running level. */
typedef struct {
    int64_t *times;
    void *level;
    Py_ssize_t level_size;  /* 4 or 8 bytes */
    Py_ssize_t capacity;
    Py_ssize_t m;
    int64_t run;
} Track;

/* Event with time `t` (already + base) and step +-1 into track `tr`: a new point when its time
   differs from the last one written, and the point's level is overwritten by each event of its
   time, so it ends as the level after the last of them (ties netted). 0 = full. */
static inline int
track_event(Track *tr, int64_t t, int64_t step)
{
    tr->run += step;
    if (tr->m == 0 || tr->times[tr->m - 1] != t) {
        if (tr->m == tr->capacity)
            return 0;
        tr->times[tr->m++] = t;
    }
    if (tr->level_size == 4)
        ((int32_t *)tr->level)[tr->m - 1] = (int32_t)tr->run;
    else
        ((int64_t *)tr->level)[tr->m - 1] = tr->run;
    return 1;
}

PyDoc_STRVAR(compact_doc,
"compact(key, base, code_bits, level, group_times, group_levels)\n"
"\n"
"The sorted events ``key`` (int64: time - base above ``code_bits`` bits of group code and the\n"
"start bit) compacted as ``concurrency._compact`` does: the distinct times (+ base) into\n"
"key's own prefix and the level after each into ``level`` (int32 or int64, key's length).\n"
"Group g < len(group_times) gets its own events' distinct times and levels in\n"
"``group_times[g]`` (int64) and ``group_levels[g]`` (int32 or int64), which must hold them\n"
"(2 x its rows; None for a group with no events); codes past the lists are swept overall\n"
"only. Returns (points overall, [points of group g])."
);

static PyObject *
compact(PyObject *self, PyObject *args)
{
    PyObject *o_key, *o_level, *o_times_list, *o_levels_list;
    long long base;
    int code_bits;
    Py_buffer key_b, level_b, *group_b = NULL;
    int have_key = 0, have_level = 0;
    Py_ssize_t n_groups = 0, n_group_b = 0;
    Track *tracks = NULL;
    PyObject *result = NULL;

    if (!PyArg_ParseTuple(args, "OLiOO!O!:compact", &o_key, &base, &code_bits, &o_level, &PyList_Type,
                          &o_times_list, &PyList_Type, &o_levels_list))
        return NULL;
    if (code_bits < 0 || code_bits > 16) {
        PyErr_SetString(PyExc_ValueError, "compact: code_bits must be in 0..16");
        return NULL;
    }
    n_groups = PyList_GET_SIZE(o_times_list);
    if (PyList_GET_SIZE(o_levels_list) != n_groups || n_groups > ((Py_ssize_t)1 << code_bits)) {
        PyErr_SetString(PyExc_ValueError, "compact: group_times and group_levels must be as long, "
                                          "at most 2**code_bits");
        return NULL;
    }
    if (get_buffer(o_key, &key_b, 1, INT64_ONLY, "compact", "key") < 0)
        goto done;
    have_key = 1;
    if (get_buffer(o_level, &level_b, 1, LEVEL_INT, "compact", "level") < 0)
        goto done;
    have_level = 1;
    Py_ssize_t size = key_b.len / 8;
    if (level_b.len / level_b.itemsize != size) {
        PyErr_SetString(PyExc_ValueError, "compact: level must be as long as key");
        goto done;
    }
    tracks = PyMem_Calloc((size_t)(n_groups + 1), sizeof(Track));
    group_b = PyMem_Calloc((size_t)(2 * n_groups + 1), sizeof(Py_buffer));
    if (!tracks || !group_b) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t g = 0; g < n_groups; g++) {
        PyObject *t = PyList_GET_ITEM(o_times_list, g), *l = PyList_GET_ITEM(o_levels_list, g);
        if (t == Py_None || l == Py_None)
            continue;  /* capacity 0: an event of this group is then an error */
        if (get_buffer(t, &group_b[n_group_b], 1, INT64_ONLY, "compact", "group_times[g]") < 0)
            goto done;
        n_group_b++;
        if (get_buffer(l, &group_b[n_group_b], 1, LEVEL_INT, "compact", "group_levels[g]") < 0)
            goto done;
        n_group_b++;
        Py_buffer *tb = &group_b[n_group_b - 2], *lb = &group_b[n_group_b - 1];
        tracks[g].times = tb->buf;
        tracks[g].level = lb->buf;
        tracks[g].level_size = lb->itemsize;
        tracks[g].capacity = tb->len / 8 < lb->len / lb->itemsize ? tb->len / 8 : lb->len / lb->itemsize;
    }
    int64_t full = -1;  /* the group whose arrays ran out (key[i] may be overwritten by then) */
    Track all = {key_b.buf, level_b.buf, level_b.itemsize, size, 0, 0};
    {
        int64_t *key = key_b.buf;
        int shift = 1 + code_bits;
        int64_t code_mask = ((int64_t)1 << code_bits) - 1;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < size; i++) {
            int64_t k = key[i];  /* read before track_event may overwrite key[m - 1], m - 1 <= i */
            int64_t t = (k >> shift) + base;
            int64_t step = (k & 1) ? 1 : -1;
            track_event(&all, t, step);  /* never full: at most one point an event */
            int64_t g = (k >> 1) & code_mask;
            if (g < n_groups && !track_event(&tracks[g], t, step)) {
                full = g;
                break;
            }
        }
        Py_END_ALLOW_THREADS
    }
    if (full >= 0) {
        PyErr_Format(PyExc_ValueError, "compact: group %lld has more events than its arrays hold", (long long)full);
        goto done;
    }
    PyObject *points = PyList_New(n_groups);
    if (!points)
        goto done;
    for (Py_ssize_t g = 0; g < n_groups; g++) {
        PyObject *v = PyLong_FromSsize_t(tracks[g].m);
        if (!v) {
            Py_DECREF(points);
            goto done;
        }
        PyList_SET_ITEM(points, g, v);
    }
    result = Py_BuildValue("(nN)", all.m, points);
done:
    if (group_b)
        while (n_group_b > 0)
            PyBuffer_Release(&group_b[--n_group_b]);
    PyMem_Free(group_b);
    PyMem_Free(tracks);
    if (have_level)
        PyBuffer_Release(&level_b);
    if (have_key)
        PyBuffer_Release(&key_b);
    return result;
}

/* Level i of a sweep (int32 or int64). */
static inline int64_t
level_at(const void *level, Py_ssize_t itemsize, Py_ssize_t i)
{
    return itemsize == 4 ? ((const int32_t *)level)[i] : ((const int64_t *)level)[i];
}

/* Both arrays of a Sweep, as long as each other; 0 or -1 with an exception set. */
static int
sweep_buffers(PyObject *o_times, PyObject *o_level, Py_buffer *times_b, Py_buffer *level_b, const char *fn)
{
    if (get_buffer(o_times, times_b, 0, INT64_ONLY, fn, "times") < 0)
        return -1;
    if (get_buffer(o_level, level_b, 0, LEVEL_INT, fn, "level") < 0) {
        PyBuffer_Release(times_b);
        return -1;
    }
    if (times_b->len / 8 != level_b->len / level_b->itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: times and level differ in length", fn);
        PyBuffer_Release(times_b);
        PyBuffer_Release(level_b);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(area_doc,
"area(times, level, block)\n"
"\n"
"sum(level[i] * (times[i+1] - times[i])) as ``concurrency._area`` computes it: each block of\n"
"``block`` segments in int64 arithmetic (wrapping as NumPy's int64 dot does), the blocks\n"
"summed exactly, as a Python int.");

static PyObject *
area(PyObject *self, PyObject *args)
{
    PyObject *o_times, *o_level;
    Py_ssize_t block;
    Py_buffer times_b, level_b;
    if (!PyArg_ParseTuple(args, "OOn:area", &o_times, &o_level, &block))
        return NULL;
    if (block <= 0) {
        PyErr_SetString(PyExc_ValueError, "area: block must be positive");
        return NULL;
    }
    if (sweep_buffers(o_times, o_level, &times_b, &level_b, "area") < 0)
        return NULL;
    wide total = 0;
    {
        const int64_t *times = times_b.buf;
        const void *level = level_b.buf;
        Py_ssize_t itemsize = level_b.itemsize, segments = times_b.len / 8 - 1;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < segments; i += block) {
            Py_ssize_t j = i + block < segments ? i + block : segments;
            uint64_t part = 0;  /* unsigned: the int64 wrap without undefined behaviour */
            for (Py_ssize_t k = i; k < j; k++)
                part += (uint64_t)level_at(level, itemsize, k) * ((uint64_t)times[k + 1] - (uint64_t)times[k]);
            total += (int64_t)part;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&times_b);
    PyBuffer_Release(&level_b);
    return wide_to_long(total);
}

PyDoc_STRVAR(level_durations_doc,
"level_durations(times, level, out)\n"
"\n"
"Into ``out`` (float64, zeroed, at least max(level[:-1]) + 1 long): the time spent at each\n"
"level, as ``np.bincount(level[:-1], weights=np.diff(times).astype(float))`` sums it (the\n"
"same float additions in the same order). A negative or too large level is a ValueError.");

static PyObject *
level_durations(PyObject *self, PyObject *args)
{
    PyObject *o_times, *o_level, *o_out;
    Py_buffer times_b, level_b, out_b;
    if (!PyArg_ParseTuple(args, "OOO:level_durations", &o_times, &o_level, &o_out))
        return NULL;
    if (sweep_buffers(o_times, o_level, &times_b, &level_b, "level_durations") < 0)
        return NULL;
    if (PyObject_GetBuffer(o_out, &out_b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&times_b);
        PyBuffer_Release(&level_b);
        return NULL;
    }
    PyObject *result = NULL;
    if (out_b.itemsize != 8 || !out_b.format || strcmp(out_b.format, "d") != 0 || out_b.ndim > 1) {
        PyErr_SetString(PyExc_TypeError, "level_durations: out must be a one-dimensional float64 array");
        goto done;
    }
    Py_ssize_t bad = -1;
    {
        const int64_t *times = times_b.buf;
        const void *level = level_b.buf;
        double *out = out_b.buf;
        Py_ssize_t itemsize = level_b.itemsize, segments = times_b.len / 8 - 1, bins = out_b.len / 8;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < segments; i++) {
            int64_t v = level_at(level, itemsize, i);
            if (v < 0 || v >= bins) {
                bad = i;
                break;
            }
            out[v] += (double)(int64_t)((uint64_t)times[i + 1] - (uint64_t)times[i]);  /* np.diff's wrap */
        }
        Py_END_ALLOW_THREADS
    }
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "level_durations: level[%zd] is not in 0..%zd", bad, out_b.len / 8 - 1);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    PyBuffer_Release(&out_b);
    PyBuffer_Release(&times_b);
    PyBuffer_Release(&level_b);
    return result;
}

PyDoc_STRVAR(pack_events_doc,
"pack_events(start_us, finish_us, codes, n_groups, base, code_bits, key)\n"
"\n"
"``grouped_sweeps``' packed events, unsorted, into ``key`` (int64, 2 x rows): interval i's\n"
"start ``((start_us[i] - base) << code_bits | group) << 1 | 1`` at i and its finish (start bit\n"
"0) at rows + i, where group is codes[i], or n_groups for a negative code (no group). Returns\n"
"(intervals per group 0..n_groups, exact sum of holds per group 0..n_groups) as two lists.\n"
"A code past n_groups - 1 is a ValueError.");

static PyObject *
pack_events(PyObject *self, PyObject *args)
{
    PyObject *o_start, *o_finish, *o_codes, *o_key;
    Py_ssize_t n_groups;
    long long base;
    int code_bits;
    Py_buffer b[4];
    int nbuf = 0;
    PyObject *result = NULL, *rows_list = NULL, *sums_list = NULL;
    int64_t *rows = NULL;
    wide *sums = NULL;

    if (!PyArg_ParseTuple(args, "OOOnLiO:pack_events", &o_start, &o_finish, &o_codes, &n_groups, &base,
                          &code_bits, &o_key))
        return NULL;
    if (n_groups < 0 || code_bits < 0 || code_bits > 16 || n_groups >= ((Py_ssize_t)1 << code_bits)) {
        PyErr_SetString(PyExc_ValueError, "pack_events: need 0 <= n_groups < 2**code_bits, code_bits <= 16");
        return NULL;
    }
    static const char *what[4] = {"start_us", "finish_us", "codes", "key"};
    static const enum kind kinds[4] = {INT64_ONLY, INT64_ONLY, ANY_INT, INT64_ONLY};
    PyObject *objs[4] = {o_start, o_finish, o_codes, o_key};
    for (int k = 0; k < 4; k++) {
        if (get_buffer(objs[k], &b[k], k == 3, kinds[k], "pack_events", what[k]) < 0)
            goto done;
        nbuf++;
    }
    Py_ssize_t n = b[0].len / 8;
    if (b[1].len / 8 != n || b[2].len / b[2].itemsize != n || b[3].len / 8 != 2 * n) {
        PyErr_SetString(PyExc_ValueError, "pack_events: start_us, finish_us and codes must be as long, key twice that");
        goto done;
    }
    rows = PyMem_Calloc((size_t)n_groups + 1, sizeof(int64_t));
    sums = PyMem_Calloc((size_t)n_groups + 1, sizeof(wide));
    if (!rows || !sums) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t bad = -1;
    {
        const int64_t *start = b[0].buf, *finish = b[1].buf;
        const void *codes = b[2].buf;
        Py_ssize_t code_size = b[2].itemsize;
        uint64_t *key = b[3].buf;
        uint64_t ubase = (uint64_t)base;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t g = code_at(codes, code_size, i);
            if (g < 0)
                g = n_groups;
            else if (g >= n_groups) {
                bad = i;
                break;
            }
            /* Unsigned: NumPy's int64 subtract and shifts, bit for bit, without undefined behaviour. */
            key[i] = ((((uint64_t)start[i] - ubase) << code_bits | (uint64_t)g) << 1) | 1u;
            key[n + i] = (((uint64_t)finish[i] - ubase) << code_bits | (uint64_t)g) << 1;
            rows[g] += 1;
            sums[g] += (wide)finish[i] - (wide)start[i];
        }
        Py_END_ALLOW_THREADS
    }
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "pack_events: codes[%zd] = %lld is not below %zd", bad,
                     (long long)code_at(b[2].buf, b[2].itemsize, bad), n_groups);
        goto done;
    }
    if ((rows_list = int_list(rows, NULL, n_groups + 1)) && (sums_list = int_list(NULL, sums, n_groups + 1)))
        result = PyTuple_Pack(2, rows_list, sums_list);
done:
    Py_XDECREF(rows_list);
    Py_XDECREF(sums_list);
    PyMem_Free(rows);
    PyMem_Free(sums);
    while (nbuf > 0)
        PyBuffer_Release(&b[--nbuf]);
    return result;
}

/* ---- one sort of the holds for every grouping (stats.groups_sorted) ---------------------- */

#define MAX_GROUPINGS 8

/* The groupings' buffers from Python sequences of the same length: codes (read), counts or
   outs (written), and their shifts (and widths) as ints. Returns how many, or -1. */
static Py_ssize_t
get_groupings(PyObject *seq, Py_buffer *views, int writable, enum kind kind, const char *fn, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(fast);
    if (m > MAX_GROUPINGS) {
        PyErr_Format(PyExc_ValueError, "%s: at most %d groupings", fn, MAX_GROUPINGS);
        Py_DECREF(fast);
        return -1;
    }
    for (Py_ssize_t j = 0; j < m; j++) {
        if (get_buffer(PySequence_Fast_GET_ITEM(fast, j), &views[j], writable, kind, fn, what) < 0) {
            while (j > 0)
                PyBuffer_Release(&views[--j]);
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return m;
}

static int
get_ints(PyObject *seq, int *out, Py_ssize_t m, const char *fn, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return -1;
    int ok = PySequence_Fast_GET_SIZE(fast) == m;
    for (Py_ssize_t j = 0; ok && j < m; j++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, j));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        ok = v >= 0 && v <= 62;
        out[j] = (int)v;
    }
    Py_DECREF(fast);
    if (!ok)
        PyErr_Format(PyExc_ValueError, "%s: %s must be one int in 0..62 per grouping", fn, what);
    return ok ? 0 : -1;
}

static void
release_all(Py_buffer *views, Py_ssize_t m)
{
    while (m > 0)
        PyBuffer_Release(&views[--m]);
}

/* The packed keys' value field starts at total_bits: a shift in 0..62 (every key fits 62 bits). */
static int
bad_total_bits(int total_bits, const char *fn)
{
    if (total_bits >= 0 && total_bits <= 62)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: total_bits must be in 0..62", fn);
    return 1;
}

PyDoc_STRVAR(pack_hold_keys_doc,
"pack_hold_keys(values, vmin, total_bits, codes, shifts, counts, key)\n"
"\n"
"``stats.groups_sorted``'s packed key, in one pass: key[i] = (values[i] - vmin) << total_bits\n"
"| sum of codes[j][i] << shifts[j]; counts[j] (int64, one per group, zeroed by the caller) gets\n"
"each grouping's rows per code. A code outside 0..len(counts[j])-1 is a ValueError. The caller\n"
"has checked that every key fits in 62 bits.");

static PyObject *
pack_hold_keys(PyObject *self, PyObject *args)
{
    PyObject *o_values, *o_codes, *o_shifts, *o_counts, *o_key;
    long long vmin;
    int total_bits, shifts[MAX_GROUPINGS];
    Py_buffer values_b, key_b, codes_b[MAX_GROUPINGS], counts_b[MAX_GROUPINGS];
    Py_ssize_t m = 0, m_counts = 0;
    PyObject *result = NULL;

    if (!PyArg_ParseTuple(args, "OLiOOOO:pack_hold_keys", &o_values, &vmin, &total_bits, &o_codes, &o_shifts,
                          &o_counts, &o_key))
        return NULL;
    if (bad_total_bits(total_bits, "pack_hold_keys"))
        return NULL;
    if (get_buffer(o_values, &values_b, 0, INT64_ONLY, "pack_hold_keys", "values") < 0)
        return NULL;
    if (get_buffer(o_key, &key_b, 1, INT64_ONLY, "pack_hold_keys", "key") < 0) {
        PyBuffer_Release(&values_b);
        return NULL;
    }
    if ((m = get_groupings(o_codes, codes_b, 0, ANY_INT, "pack_hold_keys", "codes")) < 0)
        goto done;
    if ((m_counts = get_groupings(o_counts, counts_b, 1, INT64_ONLY, "pack_hold_keys", "counts")) < 0)
        goto done;
    Py_ssize_t n = values_b.len / 8;
    int lengths_ok = m_counts == m && key_b.len / 8 == n;
    for (Py_ssize_t j = 0; lengths_ok && j < m; j++)
        lengths_ok = codes_b[j].len / codes_b[j].itemsize == n;
    if (!lengths_ok) {
        PyErr_SetString(PyExc_ValueError, "pack_hold_keys: values, key and every codes must be as long, one counts per codes");
        goto done;
    }
    if (get_ints(o_shifts, shifts, m, "pack_hold_keys", "shifts") < 0)
        goto done;
    Py_ssize_t bad = -1, bad_grouping = 0;
    {
        const int64_t *values = values_b.buf;
        uint64_t *key = key_b.buf;
        uint64_t uvmin = (uint64_t)vmin;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            key[i] = ((uint64_t)values[i] - uvmin) << total_bits;
        for (Py_ssize_t j = 0; j < m && bad < 0; j++) {
            const void *codes = codes_b[j].buf;
            Py_ssize_t code_size = codes_b[j].itemsize, n_groups = counts_b[j].len / 8;
            int64_t *counts = counts_b[j].buf;
            int shift = shifts[j];
            for (Py_ssize_t i = 0; i < n; i++) {
                int64_t g = code_at(codes, code_size, i);
                if (g < 0 || g >= n_groups) {
                    bad = i;
                    bad_grouping = j;
                    break;
                }
                key[i] |= (uint64_t)g << shift;
                counts[g] += 1;
            }
        }
        Py_END_ALLOW_THREADS
    }
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "pack_hold_keys: codes[%zd][%zd] = %lld is not in 0..%zd", bad_grouping, bad,
                     (long long)code_at(codes_b[bad_grouping].buf, codes_b[bad_grouping].itemsize, bad),
                     counts_b[bad_grouping].len / 8 - 1);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    release_all(codes_b, m);
    release_all(counts_b, m_counts);
    PyBuffer_Release(&values_b);
    PyBuffer_Release(&key_b);
    return result;
}

PyDoc_STRVAR(split_sorted_keys_doc,
"split_sorted_keys(key, total_bits, vmin, shifts, widths, counts, outs)\n"
"\n"
"The rest of ``stats.groups_sorted`` after the key is sorted, in one pass: outs[j] (int64, as\n"
"long as key) gets the values of grouping j's groups one after another, each group's in\n"
"ascending order (the stable partition of the sorted values by the codes in bits shifts[j]..\n"
"shifts[j]+widths[j]-1, groups sized by counts[j]); then key[i] becomes the value\n"
"(key[i] >> total_bits) + vmin, in place.");

static PyObject *
split_sorted_keys(PyObject *self, PyObject *args)
{
    PyObject *o_key, *o_shifts, *o_widths, *o_counts, *o_outs;
    long long vmin;
    int total_bits, shifts[MAX_GROUPINGS], widths[MAX_GROUPINGS];
    Py_buffer key_b, counts_b[MAX_GROUPINGS], outs_b[MAX_GROUPINGS];
    Py_ssize_t m = 0, m_outs = 0;
    int64_t *cursors[MAX_GROUPINGS] = {NULL};
    PyObject *result = NULL;

    if (!PyArg_ParseTuple(args, "OiLOOOO:split_sorted_keys", &o_key, &total_bits, &vmin, &o_shifts, &o_widths,
                          &o_counts, &o_outs))
        return NULL;
    if (bad_total_bits(total_bits, "split_sorted_keys"))
        return NULL;
    if (get_buffer(o_key, &key_b, 1, INT64_ONLY, "split_sorted_keys", "key") < 0)
        return NULL;
    if ((m = get_groupings(o_counts, counts_b, 0, INT64_ONLY, "split_sorted_keys", "counts")) < 0)
        goto done;
    if ((m_outs = get_groupings(o_outs, outs_b, 1, INT64_ONLY, "split_sorted_keys", "outs")) < 0)
        goto done;
    Py_ssize_t n = key_b.len / 8;
    int lengths_ok = m_outs == m;
    for (Py_ssize_t j = 0; lengths_ok && j < m; j++)
        lengths_ok = outs_b[j].len / 8 == n;
    if (!lengths_ok) {
        PyErr_SetString(PyExc_ValueError, "split_sorted_keys: one out per counts, each as long as key");
        goto done;
    }
    if (get_ints(o_shifts, shifts, m, "split_sorted_keys", "shifts") < 0 ||
        get_ints(o_widths, widths, m, "split_sorted_keys", "widths") < 0)
        goto done;
    for (Py_ssize_t j = 0; j < m; j++) {
        /* Each group's first slot: the prefix sums of its counts, which must add up to n. */
        Py_ssize_t n_groups = counts_b[j].len / 8;
        const int64_t *counts = counts_b[j].buf;
        cursors[j] = PyMem_Malloc(((size_t)n_groups + 1) * sizeof(int64_t));
        if (!cursors[j]) {
            PyErr_NoMemory();
            goto done;
        }
        int64_t at = 0;
        for (Py_ssize_t g = 0; g < n_groups; g++) {
            cursors[j][g] = at;
            at += counts[g] < 0 ? n + 1 : counts[g];
        }
        if (at != n) {
            PyErr_SetString(PyExc_ValueError, "split_sorted_keys: every counts must add up to len(key)");
            goto done;
        }
    }
    Py_ssize_t bad = -1;
    {
        uint64_t *key = key_b.buf;
        uint64_t uvmin = (uint64_t)vmin;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n && bad < 0; i++) {
            uint64_t k = key[i];
            int64_t v = (int64_t)((k >> total_bits) + uvmin);
            for (Py_ssize_t j = 0; j < m; j++) {
                uint64_t g = (k >> shifts[j]) & (((uint64_t)1 << widths[j]) - 1);
                /* A code past the counts, or a write past the end: keys and counts that do not match. */
                if (g >= (uint64_t)(counts_b[j].len / 8) || cursors[j][g] >= n) {
                    bad = i;
                    break;
                }
                ((int64_t *)outs_b[j].buf)[cursors[j][g]++] = v;
            }
            key[i] = (uint64_t)v;
        }
        Py_END_ALLOW_THREADS
    }
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "split_sorted_keys: key[%zd] holds a code its counts do not", bad);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    for (Py_ssize_t j = 0; j < MAX_GROUPINGS; j++)
        PyMem_Free(cursors[j]);
    release_all(counts_b, m);
    release_all(outs_b, m_outs);
    PyBuffer_Release(&key_b);
    return result;
}

PyDoc_STRVAR(masked_sum_doc,
"masked_sum(values, where) -> int\n"
"\n"
"The sum of the int64 ``values`` where the bool ``where`` holds (``stats.sum_where``'s NumPy\n"
"reference: np.sum(values, where=where, dtype=np.int64)), in one pass. Exact: past the int64\n"
"range, where NumPy's sum wraps, this one does not.");

static PyObject *
masked_sum(PyObject *self, PyObject *args)
{
    PyObject *o_values, *o_where;
    Py_buffer values_b, where_b;
    if (!PyArg_ParseTuple(args, "OO:masked_sum", &o_values, &o_where))
        return NULL;
    if (get_buffer(o_values, &values_b, 0, INT64_ONLY, "masked_sum", "values") < 0)
        return NULL;
    if (get_buffer(o_where, &where_b, 0, BOOL, "masked_sum", "where") < 0) {
        PyBuffer_Release(&values_b);
        return NULL;
    }
    Py_ssize_t n = values_b.len / 8;
    PyObject *result = NULL;
    if (where_b.len != n) {
        PyErr_SetString(PyExc_ValueError, "masked_sum: values and where must be as long");
        goto done;
    }
    wide total = 0;
    {
        const int64_t *values = values_b.buf;
        const uint8_t *where = where_b.buf;
        Py_BEGIN_ALLOW_THREADS
        /* Blocks summed in int64 without a branch (a block of 2**16 values of |v| < 2**47 cannot
           overflow), each block checked and redone wide when its values are bigger. */
        for (Py_ssize_t start = 0; start < n; start += 65536) {
            Py_ssize_t end = start + 65536 < n ? start + 65536 : n;
            int64_t part = 0;
            uint64_t big = 0;
            for (Py_ssize_t i = start; i < end; i++) {
                int64_t v = values[i] & -(int64_t)(where[i] != 0);
                part += v;
                big |= (uint64_t)(v < 0 ? -(v + 1) : v);
            }
            if (big < ((uint64_t)1 << 47)) {
                total += part;
                continue;
            }
            for (Py_ssize_t i = start; i < end; i++)
                if (where[i])
                    total += values[i];
        }
        Py_END_ALLOW_THREADS
    }
    result = wide_to_long(total);
done:
    PyBuffer_Release(&values_b);
    PyBuffer_Release(&where_b);
    return result;
}

PyDoc_STRVAR(flag_counts_doc,
"flag_counts(codes, flag_valid, flag_value, rows, flagged, flagged_true)\n"
"\n"
"Per group (codes 0..len(rows)-1): rows, rows whose flag is known (flag_valid) and rows whose\n"
"flag is known and true, added into the caller's int64 arrays (``tasks_health.exception_counts``'\n"
"three bincounts, in one pass). A code outside the groups is a ValueError.");

static PyObject *
flag_counts(PyObject *self, PyObject *args)
{
    PyObject *objs[6];
    Py_buffer b[6];
    int nbuf = 0;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOO:flag_counts", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5]))
        return NULL;
    static const char *what[6] = {"codes", "flag_valid", "flag_value", "rows", "flagged", "flagged_true"};
    static const enum kind kinds[6] = {ANY_INT, BOOL, BOOL, INT64_ONLY, INT64_ONLY, INT64_ONLY};
    for (int k = 0; k < 6; k++) {
        if (get_buffer(objs[k], &b[k], k >= 3, kinds[k], "flag_counts", what[k]) < 0)
            goto done;
        nbuf++;
    }
    Py_ssize_t n = b[0].len / b[0].itemsize, n_groups = b[3].len / 8;
    if (b[1].len != n || b[2].len != n || b[4].len / 8 != n_groups || b[5].len / 8 != n_groups) {
        PyErr_SetString(PyExc_ValueError, "flag_counts: codes and both flags as long, the three counts as long");
        goto done;
    }
    Py_ssize_t bad = -1;
    {
        const void *codes = b[0].buf;
        Py_ssize_t code_size = b[0].itemsize;
        const uint8_t *valid = b[1].buf, *value = b[2].buf;
        int64_t *rows = b[3].buf, *flagged = b[4].buf, *flagged_true = b[5].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t g = code_at(codes, code_size, i);
            if (g < 0 || g >= n_groups) {
                bad = i;
                break;
            }
            int known = valid[i] != 0;
            rows[g] += 1;
            flagged[g] += known;
            flagged_true[g] += known & (value[i] != 0);
        }
        Py_END_ALLOW_THREADS
    }
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "flag_counts: codes[%zd] = %lld is not in 0..%zd", bad,
                     (long long)code_at(b[0].buf, b[0].itemsize, bad), n_groups - 1);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    while (nbuf > 0)
        PyBuffer_Release(&b[--nbuf]);
    return result;
}

static PyMethodDef methods[] = {
    {"group_totals", group_totals, METH_VARARGS, group_totals_doc},
    {"pack_events", pack_events, METH_VARARGS, pack_events_doc},
    {"compact", compact, METH_VARARGS, compact_doc},
    {"area", area, METH_VARARGS, area_doc},
    {"level_durations", level_durations, METH_VARARGS, level_durations_doc},
    {"pack_hold_keys", pack_hold_keys, METH_VARARGS, pack_hold_keys_doc},
    {"masked_sum", masked_sum, METH_VARARGS, masked_sum_doc},
    {"flag_counts", flag_counts, METH_VARARGS, flag_counts_doc},
    {"split_sorted_keys", split_sorted_keys, METH_VARARGS, split_sorted_keys_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef_Slot slots[] = {
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},  /* no module state: the caller owns every buffer */
#endif
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_groups",
    "C twins of measure's grouped counts, sums and grouped sweep (optional; NumPy is the reference).",
    0, methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__groups(void)
{
    return PyModuleDef_Init(&module);
}

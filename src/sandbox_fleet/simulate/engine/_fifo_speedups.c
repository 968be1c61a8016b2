/* Optional C twin of simulate/fifo.py::place_stream (the one-pass FIFO recursion).

   Built at install when a C compiler is present (setup.py, optional=True); without it
   the pure-Python place_stream runs instead, and it stays the reference. The results
   must be the same bytes, so this file mirrors it step by step:

   - the start time is `f0 if f0 > t else t` (so a NaN arrival or slot time behaves as
     the Python comparison does);
   - the slot's next free time is `(s + h) + provision_s`, or `s + h` when provision_s is
     zero (Python's truthiness: NaN counts as non-zero, -0.0 as zero);
   - heapreplace is CPython's (Modules/_heapqmodule.c: siftup, then siftdown, comparing
     with `<`), so the heap ends in the same state, element for element;
   - no fast-math and no FP contraction (setup.py passes -ffp-contract=off).
   The one thing it cannot promise is which NaN comes out of adding two NaNs: IEEE 754 and C
   leave the sign and payload to the implementation, and this addition and Python's are
   compiled apart. A NaN lands where Python puts one; its bits may differ.

   Inputs are float64 buffers (NumPy arrays or anything with the buffer protocol), so
   no NumPy headers are needed to build it. The GIL is released in the loop. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* CPython's siftdown on a heap of doubles. */
static void
sift_down(double *heap, Py_ssize_t startpos, Py_ssize_t pos)
{
    double newitem = heap[pos];
    while (pos > startpos) {
        Py_ssize_t parentpos = (pos - 1) >> 1;
        double parent = heap[parentpos];
        if (!(newitem < parent))
            break;
        heap[parentpos] = newitem;
        heap[pos] = parent;
        pos = parentpos;
    }
}

/* CPython's heapreplace(heap, item): item goes to the root, then siftup(heap, 0). */
static void
heap_replace(double *heap, Py_ssize_t endpos, double item)
{
    Py_ssize_t pos = 0, limit = endpos >> 1;
    heap[0] = item;
    while (pos < limit) {
        Py_ssize_t childpos = 2 * pos + 1;
        if (childpos + 1 < endpos && !(heap[childpos] < heap[childpos + 1]))
            childpos += 1;
        double tmp = heap[childpos];
        heap[childpos] = heap[pos];
        heap[pos] = tmp;
        pos = childpos;
    }
    sift_down(heap, 0, pos);
}

/* A C-contiguous float64 (or int64) buffer; `what` names the argument in errors. */
static int
get_buffer(PyObject *obj, Py_buffer *view, int writable, int want_int, const char *what)
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
    int ok = view->itemsize == 8 && fmt[1] == '\0'
             && (want_int ? (fmt[0] == 'q' || fmt[0] == 'l') : fmt[0] == 'd');
    if (!ok || view->ndim > 1) {
        PyErr_Format(PyExc_TypeError, "place_stream: %s must be a one-dimensional %s array",
                     what, want_int ? "int64" : "float64");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(place_stream_doc,
"place_stream(free, arrival_s, hold_s, provision_s, start_s, order=None)\n"
"\n"
"Start times of attempts arriving at ``arrival_s`` (sorted) on one pool whose slots\n"
"are next free at the times in the heap ``free`` (float64, updated in place), written\n"
"into ``start_s``. Without ``order``, attempt i holds ``hold_s[i]`` and its start goes to\n"
"``start_s[i]``; with ``order`` (int64 rollout ids in arrival order) it holds\n"
"``hold_s[order[i]]`` and its start goes to ``start_s[order[i]]``. Same results, bit for\n"
"bit, as ``fifo.place_stream`` (a NaN result's sign and payload aside).");

static PyObject *
place_stream(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"free", "arrival_s", "hold_s", "provision_s", "start_s", "order", NULL};
    PyObject *o_free, *o_arr, *o_hold, *o_start, *o_order = Py_None;
    double provision_s;
    Py_buffer free_b, arr_b, hold_b, start_b, order_b;
    int have_order, nbuf = 0;
    Py_buffer *held[5];
    PyObject *result = NULL;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOdO|O:place_stream", kwlist,
                                     &o_free, &o_arr, &o_hold, &provision_s, &o_start, &o_order))
        return NULL;
    have_order = o_order != Py_None;
    if (get_buffer(o_free, &free_b, 1, 0, "free") < 0)
        goto done;
    held[nbuf++] = &free_b;
    if (get_buffer(o_arr, &arr_b, 0, 0, "arrival_s") < 0)
        goto done;
    held[nbuf++] = &arr_b;
    if (get_buffer(o_hold, &hold_b, 0, 0, "hold_s") < 0)
        goto done;
    held[nbuf++] = &hold_b;
    if (get_buffer(o_start, &start_b, 1, 0, "start_s") < 0)
        goto done;
    held[nbuf++] = &start_b;
    if (have_order) {
        if (get_buffer(o_order, &order_b, 0, 1, "order") < 0)
            goto done;
        held[nbuf++] = &order_b;
    }

    {
        double *heap = (double *)free_b.buf;
        const double *arr = (const double *)arr_b.buf;
        const double *hold = (const double *)hold_b.buf;
        double *start = (double *)start_b.buf;
        const long long *order = have_order ? (const long long *)order_b.buf : NULL;
        Py_ssize_t cap = free_b.len / 8, n = arr_b.len / 8;
        Py_ssize_t n_hold = hold_b.len / 8, n_start = start_b.len / 8;
        Py_ssize_t i, bad = -1;
        int with_provision = provision_s != 0.0;

        if (have_order ? order_b.len / 8 != n : (n_hold != n || n_start != n)) {
            PyErr_SetString(PyExc_ValueError, "place_stream: arrival_s, hold_s and start_s (or order) differ in length");
            goto done;
        }
        if (n > 0 && cap == 0) {
            PyErr_SetString(PyExc_IndexError, "place_stream: the slot heap is empty");
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        if (have_order) {
            for (i = 0; i < n; i++) {
                long long r = order[i];
                if (r < 0 || r >= n_hold || r >= n_start) {
                    bad = i;
                    break;
                }
            }
            if (bad < 0) {
                for (i = 0; i < n; i++) {
                    long long r = order[i];
                    double t = arr[i], f0 = heap[0];
                    double s = f0 > t ? f0 : t;
                    double v = s + hold[r];
                    if (with_provision)
                        v = v + provision_s;
                    heap_replace(heap, cap, v);
                    start[r] = s;
                }
            }
        }
        else {
            for (i = 0; i < n; i++) {
                double t = arr[i], f0 = heap[0];
                double s = f0 > t ? f0 : t;
                double v = s + hold[i];
                if (with_provision)
                    v = v + provision_s;
                heap_replace(heap, cap, v);
                start[i] = s;
            }
        }
        Py_END_ALLOW_THREADS
        if (bad >= 0) {
            PyErr_Format(PyExc_IndexError, "place_stream: order[%zd] = %lld is out of range", bad, order[bad]);
            goto done;
        }
    }
    result = Py_NewRef(Py_None);
done:
    while (nbuf > 0)
        PyBuffer_Release(held[--nbuf]);
    return result;
}

static PyMethodDef methods[] = {
    {"place_stream", (PyCFunction)(void (*)(void))place_stream, METH_VARARGS | METH_KEYWORDS, place_stream_doc},
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
    PyModuleDef_HEAD_INIT, "_fifo_speedups",
    "C twin of fifo.place_stream (optional; the pure-Python one is the reference).",
    0, methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__fifo_speedups(void)
{
    return PyModuleDef_Init(&module);
}

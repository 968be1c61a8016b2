/* A NumPy data allocator that keeps big freed blocks for the next array of about their size.

   Why: measure makes and drops many column-sized temporaries (80 MB each at 10M rows of
   int64). Each is mmapped fresh by the C library and unmapped when freed, so the kernel faults
   in and zeroes every page again for the next one: on a 10M-row input that was ~29% of all
   CPU samples (clear_page under huge-page faults). Reusing a freed block of about the size
   asked for skips both the fault and the zeroing.

   The values of every array are those NumPy's default allocator gives: ``malloc`` memory is
   uninitialised either way (np.empty), ``calloc`` (np.zeros) is passed through untouched.

   Bounds: at most SLOTS blocks and ``limit`` bytes are kept; a block is reused only for a
   request between 80% and 100% of its size (the tail is never handed out), so little is
   held that is not reused. ``restore`` frees every kept block and stops keeping; blocks freed
   after that go straight to the C library. NumPy calls these hooks with or without the GIL,
   from any thread: the slots are guarded by their own lock. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>
#include <pthread.h>
#include <pythread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 32

typedef struct {
    void *ptr;
    size_t size;
    uint64_t age; /* when it was kept: the oldest goes first */
} Slot;

static Slot slots[SLOTS];
static PyThread_type_lock slots_lock;
static size_t kept_bytes, limit_bytes, min_block_bytes;
static uint64_t clock_ticks, hits, misses;
static int depth; /* install() calls not yet restored: keeping is on while > 0 */

static int
take_slot(size_t size)
{
    /* The smallest kept block that fits ``size`` with at most 25% to spare. */
    int best = -1;
    for (int i = 0; i < SLOTS; i++) {
        size_t have = slots[i].size;
        if (slots[i].ptr != NULL && have >= size && have - size <= have / 5 &&
            (best < 0 || have < slots[best].size)) {
            best = i;
        }
    }
    return best;
}

static void *
blocks_malloc(void *ctx, size_t size)
{
    (void)ctx;
    if (size >= min_block_bytes) {
        PyThread_acquire_lock(slots_lock, WAIT_LOCK);
        int i = depth > 0 ? take_slot(size) : -1;
        void *ptr = NULL;
        if (i >= 0) {
            ptr = slots[i].ptr;
            kept_bytes -= slots[i].size;
            slots[i].ptr = NULL;
            hits++;
        }
        else {
            misses++;
        }
        PyThread_release_lock(slots_lock);
        if (ptr != NULL) {
            return ptr;
        }
    }
    return malloc(size ? size : 1);
}

static void *
blocks_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    return calloc(nelem ? nelem : 1, elsize ? elsize : 1);
}

static void *
blocks_realloc(void *ctx, void *ptr, size_t new_size)
{
    (void)ctx;
    return realloc(ptr, new_size ? new_size : 1);
}

static void
blocks_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    if (ptr == NULL) {
        return;
    }
    /* ``size`` is what was asked for; a reused block may be up to 25% bigger, so what is kept
       is counted by the smaller figure and only ever handed out for requests that fit it. */
    if (size >= min_block_bytes && size <= limit_bytes) {
        void *evicted[SLOTS];
        int n_evicted = 0, kept = 0;
        PyThread_acquire_lock(slots_lock, WAIT_LOCK);
        if (depth > 0) {
            while (1) {
                int free_slot = -1, oldest = -1;
                for (int i = 0; i < SLOTS; i++) {
                    if (slots[i].ptr == NULL) {
                        if (free_slot < 0) {
                            free_slot = i;
                        }
                    }
                    else if (oldest < 0 || slots[i].age < slots[oldest].age) {
                        oldest = i;
                    }
                }
                if (free_slot >= 0 && kept_bytes + size <= limit_bytes) {
                    slots[free_slot] = (Slot){ptr, size, ++clock_ticks};
                    kept_bytes += size;
                    kept = 1;
                    break;
                }
                if (oldest < 0) {
                    break;
                }
                evicted[n_evicted++] = slots[oldest].ptr;
                kept_bytes -= slots[oldest].size;
                slots[oldest].ptr = NULL;
            }
        }
        PyThread_release_lock(slots_lock);
        for (int i = 0; i < n_evicted; i++) {
            free(evicted[i]);
        }
        if (kept) {
            return;
        }
    }
    free(ptr);
}

static PyDataMem_Handler handler = {
    "sandbox_fleet_reused_blocks",
    1,
    {NULL, blocks_malloc, blocks_calloc, blocks_realloc, blocks_free},
};

static void
flush(void)
{
    void *freed[SLOTS];
    int n = 0;
    PyThread_acquire_lock(slots_lock, WAIT_LOCK);
    for (int i = 0; i < SLOTS; i++) {
        if (slots[i].ptr != NULL) {
            freed[n++] = slots[i].ptr;
            slots[i].ptr = NULL;
        }
    }
    kept_bytes = 0;
    PyThread_release_lock(slots_lock);
    for (int i = 0; i < n; i++) {
        free(freed[i]);
    }
}

static PyObject *
install(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t limit, min_block;
    if (!PyArg_ParseTuple(args, "nn", &limit, &min_block)) {
        return NULL;
    }
    if (limit < 0 || min_block < 1) {
        PyErr_SetString(PyExc_ValueError, "install: limit >= 0 and min_block >= 1 bytes");
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(&handler, "mem_handler", NULL);
    if (capsule == NULL) {
        return NULL;
    }
    PyObject *previous = PyDataMem_SetHandler(capsule);
    Py_DECREF(capsule);
    if (previous == NULL) {
        return NULL;
    }
    PyThread_acquire_lock(slots_lock, WAIT_LOCK);
    if (depth++ == 0) {
        limit_bytes = (size_t)limit;
        min_block_bytes = (size_t)min_block;
        hits = misses = 0;
    }
    PyThread_release_lock(slots_lock);
    return previous;
}

static PyObject *
restore(PyObject *self, PyObject *previous)
{
    (void)self;
    PyObject *mine = PyDataMem_SetHandler(previous);
    if (mine == NULL) {
        return NULL;
    }
    Py_DECREF(mine);
    PyThread_acquire_lock(slots_lock, WAIT_LOCK);
    int last = depth > 0 && --depth == 0;
    PyThread_release_lock(slots_lock);
    if (last) {
        flush();
    }
    Py_RETURN_NONE;
}

static PyObject *
stats(PyObject *self, PyObject *Py_UNUSED(ignored))
{
    (void)self;
    PyThread_acquire_lock(slots_lock, WAIT_LOCK);
    PyObject *out = Py_BuildValue("{s:K,s:K,s:n,s:i}", "hits", (unsigned long long)hits, "misses",
                                  (unsigned long long)misses, "kept_bytes", (Py_ssize_t)kept_bytes,
                                  "depth", depth);
    PyThread_release_lock(slots_lock);
    return out;
}

static PyMethodDef methods[] = {
    {"install", install, METH_VARARGS,
     "install(limit_bytes, min_block_bytes) -> previous handler: NumPy arrays made in this context "
     "from now on reuse kept blocks of at least min_block_bytes, at most limit_bytes kept."},
    {"restore", restore, METH_O, "restore(previous): set the handler back; the last restore frees every kept block."},
    {"stats", stats, METH_NOARGS, "stats() -> {hits, misses, kept_bytes, depth} since the outermost install."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_blocks", NULL, -1, methods};

/* A child forked while another thread held the lock would wait on it forever: it gets a
   fresh lock, and the blocks kept (its copies of the parent's) are freed. */
static void
after_fork_in_child(void)
{
    slots_lock = PyThread_allocate_lock();
    for (int i = 0; i < SLOTS; i++) {
        if (slots[i].ptr != NULL) {
            free(slots[i].ptr);
            slots[i].ptr = NULL;
        }
    }
    kept_bytes = 0;
}

PyMODINIT_FUNC
PyInit__blocks(void)
{
    import_array();
    slots_lock = PyThread_allocate_lock();
    if (slots_lock == NULL) {
        return PyErr_NoMemory();
    }
    if (pthread_atfork(NULL, NULL, after_fork_in_child) != 0) {
        PyErr_SetString(PyExc_OSError, "_blocks: pthread_atfork failed");
        return NULL;
    }
    return PyModule_Create(&module);
}

/* A string -> dense int32 code encoder that keeps one dictionary across many chunks.
 *
 * Why: a Parquet text column whose dictionary page overflowed the writer's page limit is
 * mostly PLAIN pages, and Arrow's read_dictionary then builds the dictionary row by row
 * through its generic memo table (~3-4 CPU-s at 10M rows). Reading plain strings and
 * encoding them here, with one table for the whole column, costs a fraction of that and
 * leaves one dictionary for every chunk (nothing to unify after).
 *
 * The reference is pyarrow.compute.dictionary_encode of the concatenated chunks: codes in
 * first-seen order, nulls stay null. Equality is exact (hash, then length, then bytes).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* 16 bytes: a probe reads the slot and then the string's bytes, no third array between. */
typedef struct {
    uint32_t tag;  /* the hash's high half (the low bits chose the slot) */
    int32_t code;  /* -1: empty slot */
    uint32_t at;   /* the string's bytes in data: [at, at + len) */
    uint32_t len;
} Slot;

typedef struct {
    PyObject_HEAD
    Slot *slots;
    uint64_t mask;        /* capacity - 1; capacity is a power of two */
    uint64_t hash_mask;   /* all ones; tests narrow it to force equal hashes */
    int64_t count;        /* distinct strings so far */
    int64_t *offsets;     /* count + 1 entries into data, for dictionary() */
    int64_t offsets_cap;
    char *data;
    int64_t data_len, data_cap;
    int busy;             /* an encode is running without the GIL: refuse re-entry */
} Encoder;

static const uint64_t K0 = 0x9E3779B97F4A7C15ULL, K1 = 0xBF58476D1CE4E5B9ULL, K2 = 0x94D049BB133111EBULL;

static inline uint64_t load64(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint64_t mum(uint64_t a, uint64_t b) {
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

/* Eight bytes a step through a 64x64->128 multiply-fold, then splitmix64's finaliser. */
static inline uint64_t hash_bytes(const unsigned char *p, int64_t n) {
    uint64_t h = K0 ^ ((uint64_t)n * K1);
    while (n >= 8) {
        h = mum(h ^ load64(p), K1) + K2;
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w = 0;
        memcpy(&w, p, (size_t)n);
        h = mum(h ^ w ^ K2, K1);
    }
    h ^= h >> 30;
    h *= K1;
    h ^= h >> 27;
    h *= K2;
    h ^= h >> 31;
    return h;
}

/* Double the table, each string's hash recomputed from its bytes (slots keep only the high
 * half; a rehash is rare, ~log2 of the distinct count times, and costs one hash a string). */
static int grow_slots(Encoder *e) {
    uint64_t cap = (e->mask + 1) * 2;
    Slot *slots = malloc(cap * sizeof(Slot));
    if (slots == NULL)
        return -1;
    for (uint64_t i = 0; i < cap; i++)
        slots[i].code = -1;
    for (uint64_t i = 0; i <= e->mask; i++) {
        Slot s = e->slots[i];
        if (s.code < 0)
            continue;
        uint64_t j = (hash_bytes((const unsigned char *)e->data + s.at, s.len) & e->hash_mask) & (cap - 1);
        while (slots[j].code >= 0)
            j = (j + 1) & (cap - 1);
        slots[j] = s;
    }
    free(e->slots);
    e->slots = slots;
    e->mask = cap - 1;
    return 0;
}

static int reserve(void **buf, int64_t *cap, int64_t need, size_t item) {
    if (need <= *cap)
        return 0;
    int64_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *p = realloc(*buf, (size_t)c * item);
    if (p == NULL)
        return -1;
    *buf = p;
    *cap = c;
    return 0;
}

/* The code of bytes [p, p+n) whose (masked) hash is h, added in first-seen order when new;
 * -1 on out of memory, -2 when the dictionary would pass what int32 codes and string
 * offsets can hold. */
static int32_t code_of(Encoder *e, const unsigned char *p, int64_t n, uint64_t h) {
    uint32_t tag = (uint32_t)(h >> 32);
    uint64_t j = h & e->mask;
    for (;;) {
        Slot *s = &e->slots[j];
        if (s->code < 0)
            break;
        if (s->tag == tag && s->len == (uint64_t)n && (n == 0 || memcmp(e->data + s->at, p, (size_t)n) == 0))
            return s->code;
        j = (j + 1) & e->mask;
    }
    if (e->count >= INT32_MAX - 1 || e->data_len + n > INT32_MAX)
        return -2;
    if (reserve((void **)&e->offsets, &e->offsets_cap, e->count + 2, sizeof(int64_t)) < 0
        || reserve((void **)&e->data, &e->data_cap, e->data_len + n, 1) < 0)
        return -1;
    Slot *s = &e->slots[j];
    s->tag = tag;
    s->at = (uint32_t)e->data_len;
    s->len = (uint32_t)n;
    if (n)
        memcpy(e->data + e->data_len, p, (size_t)n);
    e->data_len += n;
    int32_t code = (int32_t)e->count++;
    e->offsets[code + 1] = e->data_len;
    s->code = code;
    if ((uint64_t)e->count * 2 > e->mask + 1 && grow_slots(e) < 0)
        return -1; /* the table stays valid (the old slots kept), only too full */
    return code;
}

/* How far ahead a row's slot, then its string, is fetched: the table and the dictionary's
 * bytes (a few MB at 50k tasks) miss the caches on nearly every row, in random order, and
 * a probe waits on two such loads one after the other. Hashing rows ahead and prefetching
 * keeps several misses in flight. Hints only: a slot index is recomputed at use. */
#define AHEAD 16
#define RING 32 /* a power of two above AHEAD */

typedef struct {
    const void *offsets;  /* int32 or int64 (wide) string offsets, offset + length + 1 */
    int wide;
    const unsigned char *bytes;
    int64_t data_len;
    const unsigned char *vbits;  /* NULL: no nulls */
    int64_t offset, length;
} Rows;

static inline int row_valid(const Rows *r, int64_t row) {
    return r->vbits == NULL || ((r->vbits[row >> 3] >> (row & 7)) & 1);
}

static inline int row_span(const Rows *r, int64_t row, int64_t *lo, int64_t *hi) {
    if (r->wide) {
        *lo = ((const int64_t *)r->offsets)[row];
        *hi = ((const int64_t *)r->offsets)[row + 1];
    } else {
        *lo = ((const int32_t *)r->offsets)[row];
        *hi = ((const int32_t *)r->offsets)[row + 1];
    }
    return *lo >= 0 && *hi >= *lo && *hi <= r->data_len;
}

/* Codes of every row (0 at nulls, their bit set in obits when given) -> 0, or a fault:
 * 1 no memory, 2 too big, 3 offsets outside the data. Runs without the GIL. */
static int encode_rows(Encoder *e, const Rows *r, int32_t *out, unsigned char *obits, Py_ssize_t *nulls) {
    uint64_t ring[RING];
    int64_t n = r->length;
    for (int64_t k = 0; k < n + AHEAD; k++) {
        int64_t ahead = k, i = k - AHEAD, lo, hi;
        if (ahead < n) {
            int64_t row = r->offset + ahead;
            uint64_t h = 0;
            if (row_valid(r, row) && row_span(r, row, &lo, &hi)) {
                h = hash_bytes(r->bytes + lo, hi - lo) & e->hash_mask;
                __builtin_prefetch(&e->slots[h & e->mask]);
            }
            ring[ahead & (RING - 1)] = h;
        }
        int64_t mid = k - AHEAD / 2;
        if (mid >= 0 && mid < n) {
            const Slot *s = &e->slots[ring[mid & (RING - 1)] & e->mask];
            if (s->code >= 0)
                __builtin_prefetch(e->data + s->at);
        }
        if (i < 0)
            continue;
        int64_t row = r->offset + i;
        if (!row_valid(r, row)) {
            out[i] = 0;
            (*nulls)++;
            continue;
        }
        if (obits)
            obits[i >> 3] |= (unsigned char)(1u << (i & 7));
        if (!row_span(r, row, &lo, &hi))
            return 3;
        int32_t c = code_of(e, r->bytes + lo, hi - lo, ring[i & (RING - 1)]);
        if (c < 0)
            return c == -1 ? 1 : 2;
        out[i] = c;
    }
    return 0;
}

static int Encoder_init(Encoder *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"initial_capacity", "hash_mask", NULL};
    Py_ssize_t initial = 1024;
    unsigned long long hash_mask = ~0ULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|nK", kwlist, &initial, &hash_mask))
        return -1;
    if (self->slots != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Encoder already initialised");
        return -1;
    }
    uint64_t cap = 2;
    while ((Py_ssize_t)cap < initial && cap < ((uint64_t)1 << 40))
        cap *= 2;
    self->slots = malloc(cap * sizeof(Slot));
    self->offsets = malloc(64 * sizeof(int64_t));
    if (self->slots == NULL || self->offsets == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (uint64_t i = 0; i < cap; i++)
        self->slots[i].code = -1;
    self->mask = cap - 1;
    self->hash_mask = (uint64_t)hash_mask;
    self->offsets_cap = 64;
    self->offsets[0] = 0;
    return 0;
}

static void Encoder_dealloc(Encoder *self) {
    free(self->slots);
    free(self->offsets);
    free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int get_buffer(PyObject *obj, Py_buffer *view, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: expected a buffer", what);
        return -1;
    }
    return 0;
}

/* The offsets and data buffers of ``length`` strings from ``offset`` (wide: int64 offsets) as
 * Rows without validity; 0, or -1 with an exception set and nothing left held. */
static int get_strings(PyObject *off_obj, PyObject *data_obj, Py_ssize_t offset, Py_ssize_t length, int wide,
                       Py_buffer *off, Py_buffer *data, Rows *rows) {
    if (offset < 0 || length < 0) {
        PyErr_SetString(PyExc_ValueError, "offset and length must be >= 0");
        return -1;
    }
    if (get_buffer(off_obj, off, "offsets") < 0)
        return -1;
    size_t width = wide ? 8 : 4;
    if ((size_t)off->len < (size_t)(offset + length + 1) * width) {
        PyErr_SetString(PyExc_ValueError, "offsets buffer shorter than offset + length + 1 entries");
        PyBuffer_Release(off);
        return -1;
    }
    data->obj = NULL;
    if (data_obj != Py_None && get_buffer(data_obj, data, "data") < 0) {
        PyBuffer_Release(off);
        return -1;
    }
    int have_data = data_obj != Py_None;
    *rows = (Rows){off->buf, wide, have_data ? (const unsigned char *)data->buf : (const unsigned char *)"",
                   have_data ? (int64_t)data->len : 0, NULL, offset, length};
    return 0;
}

static void release_strings(Py_buffer *off, Py_buffer *data) {
    PyBuffer_Release(off);
    if (data->obj != NULL)
        PyBuffer_Release(data);
}

/* encode(offsets, data, validity, offset, length, wide) -> (codes, validity or None, nulls)
 *
 * The buffers of one Arrow string (wide=False: int32 offsets) or large_string (wide=True:
 * int64) array, with its offset and length (a slice reads from its own offset). validity
 * may be None (no nulls). Returns int32 codes (0 at null rows), a fresh validity bitmap of
 * the codes starting at bit 0 (None when no row is null), both as bytearrays (no NumPy at
 * build time), and the null count.
 */
static PyObject *Encoder_encode(Encoder *self, PyObject *args) {
    PyObject *off_obj, *data_obj, *valid_obj;
    Py_ssize_t offset, length;
    int wide;
    if (!PyArg_ParseTuple(args, "OOOnnp", &off_obj, &data_obj, &valid_obj, &offset, &length, &wide))
        return NULL;
    if (self->slots == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Encoder not initialised");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Encoder.encode is already running (one thread at a time)");
        return NULL;
    }
    Py_buffer off = {0}, data = {0}, valid = {0};
    int have_valid = 0;
    PyObject *codes = NULL, *bitmap = NULL; /* bytearrays: pa.py_buffer wraps them, no copy */
    PyObject *result = NULL;
    Rows rows;
    if (get_strings(off_obj, data_obj, offset, length, wide, &off, &data, &rows) < 0)
        return NULL;
    if (valid_obj != Py_None) {
        if (get_buffer(valid_obj, &valid, "validity") < 0)
            goto done;
        have_valid = 1;
        if ((size_t)valid.len * 8 < (size_t)(offset + length)) {
            PyErr_SetString(PyExc_ValueError, "validity buffer shorter than offset + length bits");
            goto done;
        }
    }
    Py_ssize_t nbytes = (length + 7) / 8;
    codes = PyByteArray_FromStringAndSize(NULL, length * (Py_ssize_t)sizeof(int32_t));
    if (codes == NULL)
        goto done;
    if (have_valid) {
        bitmap = PyByteArray_FromStringAndSize(NULL, nbytes);
        if (bitmap == NULL)
            goto done;
        memset(PyByteArray_AS_STRING(bitmap), 0, (size_t)nbytes);
    }
    rows.vbits = have_valid ? (const unsigned char *)valid.buf : NULL;
    int32_t *out = (int32_t *)PyByteArray_AS_STRING(codes);
    unsigned char *obits = bitmap ? (unsigned char *)PyByteArray_AS_STRING(bitmap) : NULL;
    Py_ssize_t nulls = 0;
    self->busy = 1;
    int fault;
    Py_BEGIN_ALLOW_THREADS
    fault = encode_rows(self, &rows, out, obits, &nulls);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (fault == 1) {
        PyErr_NoMemory();
        goto done;
    }
    if (fault == 2) {
        PyErr_SetString(PyExc_OverflowError, "dictionary past 2**31 - 1 entries or bytes");
        goto done;
    }
    if (fault == 3) {
        PyErr_SetString(PyExc_ValueError, "string offsets outside the data buffer");
        goto done;
    }
    result = Py_BuildValue("OOn", codes, (nulls && bitmap) ? bitmap : Py_None, nulls);
done:
    Py_XDECREF(codes);
    Py_XDECREF(bitmap);
    release_strings(&off, &data);
    if (have_valid)
        PyBuffer_Release(&valid);
    return result;
}

/* dictionary() -> (int32 offsets, data) as bytearrays: a copy of the distinct strings in code order. */
static PyObject *Encoder_dictionary(Encoder *self, PyObject *Py_UNUSED(ignored)) {
    if (self->offsets == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Encoder not initialised");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Encoder.encode is running (one thread at a time)");
        return NULL;
    }
    Py_ssize_t n_off = (Py_ssize_t)(self->count + 1), n_data = (Py_ssize_t)self->data_len;
    PyObject *offs = PyByteArray_FromStringAndSize(NULL, n_off * (Py_ssize_t)sizeof(int32_t));
    PyObject *data = PyByteArray_FromStringAndSize(NULL, n_data);
    if (offs == NULL || data == NULL) {
        Py_XDECREF(offs);
        Py_XDECREF(data);
        return NULL;
    }
    int32_t *o = (int32_t *)PyByteArray_AS_STRING(offs);
    for (int64_t i = 0; i <= self->count; i++)
        o[i] = (int32_t)self->offsets[i]; /* data_len <= INT32_MAX, held by code_of */
    if (n_data)
        memcpy(PyByteArray_AS_STRING(data), self->data, (size_t)n_data);
    PyObject *out = PyTuple_Pack(2, (PyObject *)offs, (PyObject *)data);
    Py_DECREF(offs);
    Py_DECREF(data);
    return out;
}

static Py_ssize_t Encoder_len(Encoder *self) {
    return (Py_ssize_t)self->count;
}

static PyMethodDef Encoder_methods[] = {
    {"encode", (PyCFunction)Encoder_encode, METH_VARARGS,
     "encode(offsets, data, validity, offset, length, wide) -> (int32 codes, validity bitmap or None, null count)"},
    {"dictionary", (PyCFunction)Encoder_dictionary, METH_NOARGS,
     "dictionary() -> (int32 offsets, uint8 data) of the distinct strings, in code order"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods Encoder_as_sequence = {
    .sq_length = (lenfunc)Encoder_len,
};

static PyTypeObject EncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sandbox_fleet.telemetry._strings.Encoder",
    .tp_doc = "Encoder(initial_capacity=1024, hash_mask=2**64-1): strings -> int32 codes in first-seen order",
    .tp_basicsize = sizeof(Encoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Encoder_init,
    .tp_dealloc = (destructor)Encoder_dealloc,
    .tp_methods = Encoder_methods,
    .tp_as_sequence = &Encoder_as_sequence,
};

/* ---- id hashes: the twin of validate._chunk_hashes ------------------------------------ */

static const uint64_t MIX1 = 0xBF58476D1CE4E5B9ULL, MIX2 = 0x94D049BB133111EBULL;

/* validate._chunk_hashes of one string: its length times K0, then a step per eight-byte
   little-endian word (bytes past the end zero), then splitmix64's finaliser. */
static inline uint64_t id_hash(const unsigned char *p, int64_t n) {
    uint64_t h = (uint64_t)n * K0;
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
        h ^= load64(p + k);
        h *= K0;
        h ^= h >> 32;
    }
    if (k < n) {
        uint64_t word = 0;
        memcpy(&word, p + k, (size_t)(n - k));
        h ^= word;
        h *= K0;
        h ^= h >> 32;
    }
    h ^= h >> 30;
    h *= MIX1;
    h ^= h >> 27;
    h *= MIX2;
    h ^= h >> 31;
    return h;
}

static PyObject *id_hashes(PyObject *self, PyObject *args) {
    PyObject *off_obj, *data_obj, *out_obj;
    Py_ssize_t offset, length;
    int wide;
    if (!PyArg_ParseTuple(args, "OOnnpO", &off_obj, &data_obj, &offset, &length, &wide, &out_obj))
        return NULL;
    Py_buffer off = {0}, data = {0}, out = {0};
    Rows rows;
    PyObject *result = NULL;
    if (get_strings(off_obj, data_obj, offset, length, wide, &off, &data, &rows) < 0)
        return NULL;
    if (PyObject_GetBuffer(out_obj, &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        goto done;
    if (out.len != length * 8) {
        PyErr_SetString(PyExc_ValueError, "out must hold length uint64 hashes");
        goto done;
    }
    uint64_t *hashes = (uint64_t *)out.buf;
    Py_ssize_t bad = -1;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < length; i++) {
        int64_t lo, hi;
        if (!row_span(&rows, offset + i, &lo, &hi)) {
            bad = i;
            break;
        }
        hashes[i] = id_hash(rows.bytes + lo, hi - lo);
    }
    Py_END_ALLOW_THREADS
    if (bad >= 0) {
        PyErr_Format(PyExc_ValueError, "string %zd: offsets outside the data buffer", bad);
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    release_strings(&off, &data);
    if (out.obj != NULL)
        PyBuffer_Release(&out);
    return result;
}

static PyMethodDef module_methods[] = {
    {"id_hashes", id_hashes, METH_VARARGS,
     "id_hashes(offsets, data, offset, length, wide, out): validate._chunk_hashes of the strings into out (uint64)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_strings",
    "String dictionary encoder (twin of pyarrow.compute.dictionary_encode) and id hashes (of validate._chunk_hashes).",
    -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__strings(void) {
    if (PyType_Ready(&EncoderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&EncoderType);
    if (PyModule_AddObject(m, "Encoder", (PyObject *)&EncoderType) < 0) {
        Py_DECREF(&EncoderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

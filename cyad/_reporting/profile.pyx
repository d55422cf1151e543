"""Compiled pieces of cyad's profiler: an allocation counter, a C-level copy, nogil timings.

`count_allocations` runs a function with every allocator of the process that
Python code can reach wrapped in a counter: CPython's three allocator domains
(raw, mem, object: every Python object, every small buffer) and NumPy's array
data handler. It counts requests - what a function asks for, even when a cache
serves it - so a clean prepared call reads exactly 0. Only the calling thread's
requests count, and those of cyad's pool threads (the parts of a call): not another
thread's that happens to run meanwhile (a library's background work, pytest-xdist's
messages).
"""
import itertools

cimport numpy as cnp
from libc.string cimport memcpy
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

cimport cyad
from cyad._core cimport Prep
from cyad._dual.engine cimport DualEngine
from cyad._wrapper cimport cyad_function
from cyad._parallel.threads cimport in_pool_thread

cnp.import_array()

cdef extern from *:
    """
    #include <Python.h>
    #include <numpy/arrayobject.h>
    #if !defined(_WIN32)
    #include <pthread.h>
    #endif

    /* whose requests count: the thread that started counting, and the pool's */
    static int (*cyad_in_pool_thread)(void);
    #if !defined(_WIN32)
    static pthread_t cyad_counting_thread;
    static int cyad_counted(void) {
        return pthread_equal(pthread_self(), cyad_counting_thread) || cyad_in_pool_thread();
    }
    #else
    static int cyad_counted(void) { return 1; }
    #endif
    /* (pool threads count at once) */
    #if defined(__GNUC__) || defined(__clang__)
    #define CYAD_ADD_ONE(n) __atomic_fetch_add(&(n), 1, __ATOMIC_RELAXED)
    #else
    #define CYAD_ADD_ONE(n) ((n)++)
    #endif
    #define CYAD_COUNT(n) do { if (cyad_counted()) CYAD_ADD_ONE(n); } while (0)

    typedef struct {
        PyMemAllocatorEx original;
        long long count;
    } cyad_counting_domain;

    static cyad_counting_domain cyad_domains[3];
    static const PyMemAllocatorDomain cyad_domain_ids[3] = {
        PYMEM_DOMAIN_RAW, PYMEM_DOMAIN_MEM, PYMEM_DOMAIN_OBJ};

    static void *cyad_count_malloc(void *ctx, size_t size) {
        cyad_counting_domain *d = (cyad_counting_domain *)ctx;
        CYAD_COUNT(d->count);
        return d->original.malloc(d->original.ctx, size);
    }
    static void *cyad_count_calloc(void *ctx, size_t n, size_t size) {
        cyad_counting_domain *d = (cyad_counting_domain *)ctx;
        CYAD_COUNT(d->count);
        return d->original.calloc(d->original.ctx, n, size);
    }
    static void *cyad_count_realloc(void *ctx, void *ptr, size_t size) {
        cyad_counting_domain *d = (cyad_counting_domain *)ctx;
        CYAD_COUNT(d->count);
        return d->original.realloc(d->original.ctx, ptr, size);
    }
    static void cyad_count_free(void *ctx, void *ptr) {
        cyad_counting_domain *d = (cyad_counting_domain *)ctx;
        d->original.free(d->original.ctx, ptr);
    }

    /* NumPy's array data: a handler that counts and forwards to the one in use */
    static PyDataMemAllocator cyad_numpy_original;
    static long long cyad_numpy_count;

    static void *cyad_numpy_malloc(void *ctx, size_t size) {
        CYAD_COUNT(cyad_numpy_count);
        return cyad_numpy_original.malloc(cyad_numpy_original.ctx, size);
    }
    static void *cyad_numpy_calloc(void *ctx, size_t n, size_t size) {
        CYAD_COUNT(cyad_numpy_count);
        return cyad_numpy_original.calloc(cyad_numpy_original.ctx, n, size);
    }
    static void *cyad_numpy_realloc(void *ctx, void *ptr, size_t size) {
        CYAD_COUNT(cyad_numpy_count);
        return cyad_numpy_original.realloc(cyad_numpy_original.ctx, ptr, size);
    }
    static void cyad_numpy_free(void *ctx, void *ptr, size_t size) {
        cyad_numpy_original.free(cyad_numpy_original.ctx, ptr, size);
    }
    static PyDataMem_Handler cyad_numpy_counting = {
        "cyad_counting", 1,
        {NULL, cyad_numpy_malloc, cyad_numpy_calloc, cyad_numpy_realloc, cyad_numpy_free}};

    /* Start counting the calling thread's requests and those of the threads in_pool_thread
       tells; returns NumPy's handler capsule in use before, or NULL on error. */
    static PyObject *cyad_start_counting(void *in_pool_thread) {
        PyObject *previous = PyDataMem_GetHandler(), *counting;
        cyad_in_pool_thread = (int (*)(void))in_pool_thread;
    #if !defined(_WIN32)
        cyad_counting_thread = pthread_self();
    #endif
        if (previous == NULL) return NULL;
        PyDataMem_Handler *handler =
            (PyDataMem_Handler *)PyCapsule_GetPointer(previous, "mem_handler");
        if (handler == NULL) { Py_DECREF(previous); return NULL; }
        cyad_numpy_original = handler->allocator;
        cyad_numpy_count = 0;
        counting = PyCapsule_New(&cyad_numpy_counting, "mem_handler", NULL);
        if (counting == NULL) { Py_DECREF(previous); return NULL; }
        PyObject *old = PyDataMem_SetHandler(counting);
        Py_DECREF(counting);
        if (old == NULL) { Py_DECREF(previous); return NULL; }
        Py_DECREF(old);
        for (int i = 0; i < 3; i++) {
            PyMemAllocatorEx counting_allocator = {&cyad_domains[i], cyad_count_malloc,
                                                   cyad_count_calloc, cyad_count_realloc,
                                                   cyad_count_free};
            PyMem_GetAllocator(cyad_domain_ids[i], &cyad_domains[i].original);
            cyad_domains[i].count = 0;
            PyMem_SetAllocator(cyad_domain_ids[i], &counting_allocator);
        }
        return previous;
    }

    /* Stop counting, restore NumPy's handler; returns the number of requests counted. */
    static long long cyad_stop_counting(PyObject *previous) {
        long long total = cyad_numpy_count;
        for (int i = 2; i >= 0; i--) {
            PyMem_SetAllocator(cyad_domain_ids[i], &cyad_domains[i].original);
            total += cyad_domains[i].count;
        }
        PyObject *old = PyDataMem_SetHandler(previous);
        Py_XDECREF(old);
        return total;
    }
    """
    object cyad_start_counting(void* in_pool_thread)
    long long cyad_stop_counting(object previous)


def count_allocations(fn, Py_ssize_t calls):
    """Allocation requests made while fn() runs `calls` times (the loop itself makes none)."""
    previous = cyad_start_counting(<void*>in_pool_thread)
    try:
        for _ in itertools.repeat(None, calls):
            fn()
    finally:
        total = cyad_stop_counting(previous)
    return total


# -- the classic experiment at C level: y <- x ------------------------------------------------

cdef int copy(const double* x, const double* dx, double* y, double* dy,
              Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width, void* context) noexcept nogil:
    memcpy(y, x, n_x * sizeof(double))
    memcpy(dy, dx, n_x * width * sizeof(double))
    return 0


def copy_function():
    """f(y, x): y[...] = x as a C function of cyad's signature (float64)."""
    return cyad.wrap(copy, NULL, NULL)


def copy_by_hand(cnp.ndarray x, cnp.ndarray dx, cnp.ndarray y, cnp.ndarray out):
    """The same memory work from Python without cyad: y <- x and out <- dx (float64, contiguous)."""
    memcpy(cnp.PyArray_DATA(y), cnp.PyArray_DATA(x), cnp.PyArray_NBYTES(x))
    memcpy(cnp.PyArray_DATA(out), cnp.PyArray_DATA(dx), cnp.PyArray_NBYTES(dx))


cdef double now() noexcept nogil:
    cdef timespec t
    clock_gettime(CLOCK_MONOTONIC, &t)
    return t.tv_sec + 1e-9 * t.tv_nsec


def nogil_copy_times(prep, cnp.ndarray x, cnp.ndarray dx, cnp.ndarray y, cnp.ndarray value,
                     cnp.ndarray out, str operator, Py_ssize_t calls):
    """Seconds per call of the C copy in nogil loops: (1) a prepared pushforward (or
    value_and_pushforward) through cyad's entry point, (2) the same copies by hand through a
    function pointer, (3) f alone through the prep's cyad_function (the FunctionWrapper's
    pointer and context), (4) f alone called directly."""
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    cdef cyad_function function = (<DualEngine>(<Prep?>prep).engine_state).state.function
    cdef cyad.cyad_f64 by_pointer = copy
    cdef double* xp = <double*>cnp.PyArray_DATA(x)
    cdef double* dxp = <double*>cnp.PyArray_DATA(dx)
    cdef double* yp = <double*>cnp.PyArray_DATA(y)
    cdef double* vp = <double*>cnp.PyArray_DATA(value)
    cdef double* op = <double*>cnp.PyArray_DATA(out)
    cdef Py_ssize_t _, n = cnp.PyArray_SIZE(x)
    cdef bint with_value = operator == "value_and_pushforward"
    cdef double t[5]
    with nogil:
        t[0] = now()
        if with_value:
            for _ in range(calls):
                cyad.value_and_pushforward_nogil(handle, xp, dxp, yp, vp, op)
        else:
            for _ in range(calls):
                cyad.pushforward_nogil(handle, xp, dxp, yp, op)
        t[1] = now()
        for _ in range(calls):
            by_pointer(xp, dxp, yp, op, n, n, 1, NULL)
            if with_value:
                memcpy(vp, yp, n * sizeof(double))
        t[2] = now()
        for _ in range(calls):
            function.f64(xp, dxp, yp, op, n, n, 1, function.context)
        t[3] = now()
        for _ in range(calls):
            copy(xp, dxp, yp, op, n, n, 1, NULL)
        t[4] = now()
    return tuple([(t[k + 1] - t[k]) / calls for k in range(4)])


def empty(f, x, dx, *, y=None, prep=None, out=None):
    """A compiled function taking value_and_pushforward's arguments and doing nothing: the
    floor of any call from Python with this signature."""

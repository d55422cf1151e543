# The cost of cyad's nogil path for the classic copy y <- x, against the same copies by hand.
# Built and run by asv_bench/nogil_overhead.py.
import numpy as np

from cyad import prepare_pushforward

cimport cyad
from libc.string cimport memcpy
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC


cdef int copy(const double* x, const double* dx, double* y, double* dy,
              Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width, void* context) noexcept nogil:
    memcpy(y, x, n_x * sizeof(double))
    memcpy(dy, dx, n_x * width * sizeof(double))
    return 0


cdef double now() noexcept nogil:
    cdef timespec t
    clock_gettime(CLOCK_MONOTONIC, &t)
    return t.tv_sec + 1e-9 * t.tv_nsec


def copy_function():
    return cyad.wrap(copy, NULL, NULL)


def per_call(Py_ssize_t n, Py_ssize_t loops):
    """Seconds per call, in nogil loops: (cyad value_and_pushforward_nogil, by hand through a
    function pointer, through the FunctionWrapper's pointer, direct call)."""
    cdef double[::1] x = np.arange(n, dtype=float), dx = np.ones(n), y = np.zeros(n)
    cdef double[::1] value = np.zeros(n), out = np.zeros(n)
    prep = prepare_pushforward(copy_function(), np.asarray(x), np.asarray(dx), y=np.asarray(y))
    cdef cyad.cyad_prep* state = cyad.prep_state(prep)
    cdef cyad.cyad_f64 by_pointer = copy
    cdef Py_ssize_t i
    cdef double t0, t1, t2, t3, t4
    with nogil:
        t0 = now()
        for i in range(loops):
            cyad.value_and_pushforward_nogil(state, &x[0], &dx[0], &y[0], &value[0], &out[0])
        t1 = now()
        for i in range(loops):
            # the same memory work by hand: f through a function pointer, then the value
            by_pointer(&x[0], &dx[0], &y[0], &out[0], n, n, 1, NULL)
            memcpy(&value[0], &y[0], n * sizeof(double))
        t2 = now()
        for i in range(loops):
            state.function.f64(&x[0], &dx[0], &y[0], &out[0], n, n, 1, state.function.context)
        t3 = now()
        for i in range(loops):
            copy(&x[0], &dx[0], &y[0], &out[0], n, n, 1, NULL)
        t4 = now()
    return ((t1 - t0) / loops, (t2 - t1) / loops, (t3 - t2) / loops, (t4 - t3) / loops)


def empty(f, x, dx, *, y=None, prep=None, out=None):
    """An empty compiled function with value_and_pushforward's arguments."""

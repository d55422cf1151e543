from cpython.ref cimport PyObject

from cyad._prep cimport prep_header, Engine
from cyad._tape_replay cimport Replay, tape_replay

# The tape engine's state of a prep, usable without the GIL. Places are offsets in
# elements of the replay's arena; -1: absent.
ctypedef struct tape_prep:
    prep_header base           # first: a handle is a pointer to this struct
    PyObject* engine           # the TapeEngine (borrowed: it owns this struct)
    const tape_replay* program  # its replay's state; NULL until f is recorded
    Py_ssize_t split           # instructions [0, split) need no seed: once per call
    int family
    Py_ssize_t item            # bytes per number
    Py_ssize_t directions      # tangents, or basis directions
    Py_ssize_t lanes           # directions per replay of the derivative part
    Py_ssize_t x_at, y_at      # x; y's incoming values (f(y, x))
    Py_ssize_t t_at, t2_at     # the tangent input(s) of lanes x n_x
    Py_ssize_t value_at        # f's value
    Py_ssize_t first_at, first_size    # a second-order family's first-order result
    Py_ssize_t result_at, result_size  # the results (lanes of them, or the gradient)


cdef class TapeEngine(Engine):
    cdef tape_prep state
    cdef Replay replay
    cdef object dtype
    cdef tuple x_shape
    cdef object out_shape
    cdef bint two_argument
    cdef int recorded                  # records of f so far
    cdef object error                  # the exception f raised while recorded

    cdef _check_python(self, object f)
    cdef record_at(self, const void* x, void* y, int failed)
    cdef _derive(self, tape, list values, list names)

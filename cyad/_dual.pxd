cimport numpy as cnp

cdef class Dual:
    # values: the primal numbers, shape S; partials: shape S + (width,), same dtype.
    # tag identifies the differentiation the dual belongs to.
    cdef readonly cnp.ndarray values
    cdef readonly cnp.ndarray partials
    cdef readonly Py_ssize_t width
    cdef readonly object tag

cdef Dual new_dual(cnp.ndarray values, cnp.ndarray partials, Py_ssize_t width, object tag)

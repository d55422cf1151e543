cimport numpy as cnp
from cyad._array_methods cimport ArrayMethods

cdef class Tag:
    cdef readonly Py_ssize_t width     # lanes of the duals it marks
    cdef readonly Tag outer            # a nested tag's outer and inner directions
    cdef readonly Tag inner            # (None for a first-order tag)
    cdef Tag nested                    # the last nested tag made with this as inner

cdef Tag nested_tag(Tag outer, Tag inner)
cpdef void enter() noexcept
cpdef void leave() noexcept
cdef bint differentiating() noexcept


cdef class Dual(ArrayMethods):
    # values: the primal numbers, shape S; partials: shape S + (width,), same dtype.
    # tag identifies the differentiation the dual belongs to.
    cdef readonly cnp.ndarray values
    cdef readonly cnp.ndarray partials
    cdef readonly Py_ssize_t width
    cdef readonly Tag tag

cdef Dual new_dual(cnp.ndarray values, cnp.ndarray partials, Py_ssize_t width, Tag tag)

"""f(x, *args) as a function of x alone, whose other arguments are inputs of each call.

A `Bound` is the callable an engine differentiates when f takes more than x: it calls
``function(x, *leaves)`` with the leaves of the current call, the floating-point arrays of
f's other arguments (cyad/_arguments/operators.py builds `function`, which puts them back
into f's arguments). The dual engine simply calls it. The tape engine records the leaves
as inputs of the tape (not constants it captured): every call copies the current leaves
into their places (`data`, `nbytes`) as it copies x, so that new values of them need no
new recording, and the Python state a default tape compares is `function`'s, not the
leaves'. A Bound `per_rows` (cyad.at_points') has `data` pointed at each point's arguments
by a compiled loop, without the GIL; its evaluations of f read them from there.
"""
import numpy as np

cimport numpy as cnp
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

cnp.import_array()


cdef class LeafSource:
    """The leaves of the call under way, as a tuple (made when f is evaluated)."""

    cdef tuple current_leaves(self):
        raise NotImplementedError


cdef class Bound:
    """``function(x, *leaves)`` as a callable of x alone (``(y, x)`` in the two-argument
    form), the leaves those of the current call (`set`)."""

    def __init__(self, function, tuple leaves, dtype):
        self.function = function
        self.dtype = np.dtype(dtype)
        self.typenum = self.dtype.num
        self.shapes = tuple(np.shape(leaf) for leaf in leaves)
        self.count = len(leaves)
        self.data = <const void**>malloc(max(self.count, 1) * sizeof(void*))
        self.nbytes = <Py_ssize_t*>malloc(max(self.count, 1) * sizeof(Py_ssize_t))
        if self.data == NULL or self.nbytes == NULL:
            raise MemoryError()
        if not self.set(leaves):
            raise ValueError("cyad: leaves that do not fit themselves")   # (unreachable)

    def __dealloc__(self):
        free(self.data)
        free(self.nbytes)

    cpdef bint set(self, tuple leaves) except -1:
        """Take the leaves of this call: False (nothing set) when their count or shapes
        differ from the prep's. An array of the prep's dtype, C-contiguous, is used as it
        is (nothing allocated); another is converted (a copy, kept until the next call)."""
        cdef Py_ssize_t k
        cdef bint as_given = True
        if len(leaves) != self.count:
            return False
        for k in range(self.count):
            if not _shaped(leaves[k], <tuple>self.shapes[k]):
                return False
            as_given = as_given and _fits(leaves[k], self.typenum)
        if not as_given:
            leaves = tuple([np.asarray(leaf, self.dtype, order="C") for leaf in leaves])
        self._leaves = leaves
        self.source = None
        for k in range(self.count):
            self.data[k] = cnp.PyArray_DATA(<cnp.ndarray>leaves[k])
            self.nbytes[k] = cnp.PyArray_NBYTES(<cnp.ndarray>leaves[k])
        return True

    def per_rows(self):
        """From now on, read the leaves from the memory `data` points to at each
        evaluation (cyad.at_points' loop points it at each point's arguments)."""
        self.per_row = True

    cdef tuple _read(self):
        # the leaves copied from their memory (f may keep them: they are its own)
        cdef Py_ssize_t k
        cdef cnp.ndarray a
        cdef list leaves = []
        for k in range(self.count):
            a = np.empty(self.shapes[k], self.dtype)
            memcpy(cnp.PyArray_DATA(a), self.data[k], self.nbytes[k])
            leaves.append(a)
        return tuple(leaves)

    @property
    def leaves(self):
        """The arrays of this call, in the prep's dtype."""
        if self.per_row:
            return self._read()
        if self.source is not None:
            self._leaves = self.source.current_leaves()
            self.source = None
        return self._leaves

    def __call__(self, *arguments):
        return self.function(*arguments, *self.leaves)

    def __repr__(self):
        return f"<f of x and {self.count} arrays of arguments: {self.function!r}>"


cdef inline bint _fits(object leaf, int typenum) noexcept:
    # an ndarray used as it is: the prep's dtype in native order, C-contiguous
    return (cnp.PyArray_Check(leaf) and cnp.PyArray_TYPE(<cnp.ndarray>leaf) == typenum
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>leaf)
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>leaf))


cdef bint _shaped(object leaf, tuple shape) except -1:
    # whether leaf (an array, a number) has this shape, read without making a tuple
    cdef Py_ssize_t i
    if not cnp.PyArray_Check(leaf):
        return np.shape(leaf) == shape
    if cnp.PyArray_NDIM(<cnp.ndarray>leaf) != len(shape):
        return False
    for i in range(len(shape)):
        if cnp.PyArray_DIMS(<cnp.ndarray>leaf)[i] != <Py_ssize_t>shape[i]:
            return False
    return True

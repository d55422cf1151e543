# what gives a Bound the leaves of the call under way (a compiled prepared call, which
# sets their memory itself and builds the tuple only where f is evaluated)
cdef class LeafSource:
    cdef tuple current_leaves(self)


# f(x, *args) as a function of x alone, with the arrays of f's other arguments set per call
cdef class Bound:
    cdef readonly object function      # function(x, *leaves), or function(y, x, *leaves)
    cdef tuple _leaves                 # the arrays of this call, in the prep's dtype
    cdef LeafSource source             # or, during a compiled call, where to find them
    cdef readonly tuple shapes         # their shapes, fixed when the prep was made
    cdef readonly object dtype
    cdef int typenum
    cdef const void** data             # their memory (C-contiguous), for a copy without the GIL
    cdef Py_ssize_t* nbytes            # their sizes in bytes
    cdef readonly Py_ssize_t count
    # the leaves are read from `data` at each evaluation (cyad.at_points points `data` at
    # each row's arguments without the GIL)
    cdef readonly bint per_row

    cpdef bint set(self, tuple leaves) except -1
    cdef tuple _read(self)

cdef class ArrayMethods:
    pass

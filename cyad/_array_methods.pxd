cdef class ArrayMethods:
    pass


cdef bint defers_to(object other)

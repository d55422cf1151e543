from cyad._fused cimport real


cdef void unary_chunks(int op, Py_ssize_t width, Py_ssize_t n,
                       const real* xv, const real* xp,
                       real* yv, real* yp) noexcept nogil

cdef void binary_chunks(int op, Py_ssize_t width, Py_ssize_t n,
                        const real* av, Py_ssize_t a_step, const real* ap,
                        const real* bv, Py_ssize_t b_step, const real* bp,
                        real* yv, real* yp) noexcept nogil

cdef void unary_nested(int op, Py_ssize_t outer, Py_ssize_t inner, Py_ssize_t width, Py_ssize_t n,
                       const real* xv, const real* xp, real* yv, real* yp) noexcept nogil

cdef void binary_nested(int op, Py_ssize_t outer, Py_ssize_t inner, Py_ssize_t width, Py_ssize_t n,
                        const real* av, Py_ssize_t a_step, const real* ap,
                        const real* bv, Py_ssize_t b_step, const real* bp,
                        real* yv, real* yp) noexcept nogil

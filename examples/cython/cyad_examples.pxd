# Declared here so that they are exported in the module's __pyx_capi__, where
# cyad.FunctionWrapper can take them.
cdef int rosenbrock(const double* x, const double* dx, double* y, double* dy,
                    Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                    void* context) noexcept nogil
cdef int rosenbrock_second(const double* x, const double* dx, double* y, double* dy,
                           Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                           void* context) noexcept nogil
cdef int rosenbrock_second_f32(const float* x, const float* dx, float* y, float* dy,
                               Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer,
                               Py_ssize_t inner, void* context) noexcept nogil
cdef int robertson(const double* x, const double* dx, double* y, double* dy,
                   Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                   void* context) noexcept nogil
cdef int robertson_f32(const float* x, const float* dx, float* y, float* dy,
                       Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                       void* context) noexcept nogil

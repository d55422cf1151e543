# The floating-point status flags NumPy reports (divide by zero, overflow, underflow,
# invalid; not inexact), for compiled code that computes where NumPy's own checks do not
# run: clear them before a computation and test them after it, a libc call each (fenv is
# per thread). The dual engine's kernels and the tape's replay both read them.

cdef extern from "<fenv.h>" nogil:
    int FE_DIVBYZERO
    int FE_OVERFLOW
    int FE_UNDERFLOW
    int FE_INVALID
    int fetestexcept(int excepts)
    int feclearexcept(int excepts)


cdef inline int numpy_fp_flags() noexcept nogil:
    return FE_DIVBYZERO | FE_OVERFLOW | FE_UNDERFLOW | FE_INVALID


cdef inline int non_finite_fp_flags() noexcept nogil:
    # the flags of an operation that made an infinity or a NaN of finite numbers
    return FE_DIVBYZERO | FE_OVERFLOW | FE_INVALID


cdef inline void clear_fp_flags() noexcept nogil:
    if fetestexcept(numpy_fp_flags()):
        feclearexcept(numpy_fp_flags())


cdef inline int raised_fp_flags() noexcept nogil:
    return fetestexcept(numpy_fp_flags())

"""SciPy's special-function kernels, for the rule table's scipy.special entries.

The rules of scipy.special's ufuncs (cyad/_rules/table.py) compute their values, and the
special functions in their derivatives, with SciPy's own compiled kernels, so that a
value equals what plain SciPy gives. cyad does not build against SciPy (it is a test
dependency only): the kernels are the double-precision functions of
`scipy.special.cython_special`, whose function pointers its `__pyx_capi__` capsules hold
(a fused function under several mangled names: the one whose capsule signature reads
double in, double out). They are looked up the first time a rule needs one (holding the
GIL for that moment), so that cyad imports and works without SciPy; without it, these
rules give NaN - and cannot be reached from Python, where no scipy.special ufunc exists.

Hurwitz's zeta(s, q), which cython_special does not export, is the algorithm of SciPy's
(Cephes') `zeta`: Euler-Maclaurin summation; it gives the polygamma functions
(psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x)) that the derivatives of gammaln, digamma and
betaln need.
"""
from libc.math cimport INFINITY, NAN, fabs, floor, pow, tgamma

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer

ctypedef double (*kernel1)(double, int) noexcept nogil
ctypedef double (*kernel2)(double, double, int) noexcept nogil

# the kernels by name, in the order of their slots below
_UNARY = ("erf", "erfc", "erfinv", "erfcx", "ndtr", "log_ndtr", "ndtri", "expit", "logit",
          "log_expit", "gammaln", "gamma", "loggamma", "psi", "entr", "i0", "i0e", "i1", "i1e",
          "j0", "j1")
_BINARY = ("betaln", "beta", "xlogy", "xlog1py", "rel_entr", "kl_div", "iv", "ive", "jv",
           "gammainc", "gammaincc", "boxcox", "boxcox1p")
_SIGNATURE1 = b"double (double, int __pyx_skip_dispatch)"
_SIGNATURE2 = b"double (double, double, int __pyx_skip_dispatch)"

cdef kernel1 _kernels1[21]
cdef kernel2 _kernels2[13]
cdef bint _loaded = False


cdef void* _pointer(dict capi, str name, bytes signature) except NULL:
    for key in (name, "__pyx_fuse_0" + name, "__pyx_fuse_1" + name, "__pyx_fuse_2" + name):
        capsule = capi.get(key)
        if capsule is not None and PyCapsule_GetName(capsule) == signature:
            return PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))
    raise ImportError(f"scipy.special.cython_special has no double {name}")


cdef void _load() noexcept nogil:
    # the kernels, once; a failed look-up (no SciPy) leaves them unset: NaN
    global _loaded
    with gil:
        if _loaded:
            return
        try:
            from scipy.special.cython_special import __pyx_capi__ as capi
            for i, name in enumerate(_UNARY):
                _kernels1[i] = <kernel1>_pointer(capi, name, _SIGNATURE1)
            for i, name in enumerate(_BINARY):
                _kernels2[i] = <kernel2>_pointer(capi, name, _SIGNATURE2)
        except ImportError:
            for i in range(len(_UNARY)):
                _kernels1[i] = NULL
            for i in range(len(_BINARY)):
                _kernels2[i] = NULL
        _loaded = True


cdef inline double _call1(int k, double x) noexcept nogil:
    if not _loaded:
        _load()
    return NAN if _kernels1[k] == NULL else _kernels1[k](x, 0)


cdef inline double _call2(int k, double a, double b) noexcept nogil:
    if not _loaded:
        _load()
    return NAN if _kernels2[k] == NULL else _kernels2[k](a, b, 0)


cdef double erf(double x) noexcept nogil: return _call1(0, x)
cdef double erfc(double x) noexcept nogil: return _call1(1, x)
cdef double erfinv(double x) noexcept nogil: return _call1(2, x)
cdef double erfcx(double x) noexcept nogil: return _call1(3, x)
cdef double ndtr(double x) noexcept nogil: return _call1(4, x)
cdef double log_ndtr(double x) noexcept nogil: return _call1(5, x)
cdef double ndtri(double x) noexcept nogil: return _call1(6, x)
cdef double expit(double x) noexcept nogil: return _call1(7, x)
cdef double logit(double x) noexcept nogil: return _call1(8, x)
cdef double log_expit(double x) noexcept nogil: return _call1(9, x)
cdef double gammaln(double x) noexcept nogil: return _call1(10, x)
cdef double gamma(double x) noexcept nogil: return _call1(11, x)
cdef double loggamma(double x) noexcept nogil: return _call1(12, x)
cdef double psi(double x) noexcept nogil: return _call1(13, x)
cdef double entr(double x) noexcept nogil: return _call1(14, x)
cdef double i0(double x) noexcept nogil: return _call1(15, x)
cdef double i0e(double x) noexcept nogil: return _call1(16, x)
cdef double i1(double x) noexcept nogil: return _call1(17, x)
cdef double i1e(double x) noexcept nogil: return _call1(18, x)
cdef double j0(double x) noexcept nogil: return _call1(19, x)
cdef double j1(double x) noexcept nogil: return _call1(20, x)
cdef double betaln(double a, double b) noexcept nogil: return _call2(0, a, b)
cdef double beta(double a, double b) noexcept nogil: return _call2(1, a, b)
cdef double xlogy(double x, double y) noexcept nogil: return _call2(2, x, y)
cdef double xlog1py(double x, double y) noexcept nogil: return _call2(3, x, y)
cdef double rel_entr(double x, double y) noexcept nogil: return _call2(4, x, y)
cdef double kl_div(double x, double y) noexcept nogil: return _call2(5, x, y)
cdef double iv(double v, double x) noexcept nogil: return _call2(6, v, x)
cdef double ive(double v, double x) noexcept nogil: return _call2(7, v, x)
cdef double jv(double v, double x) noexcept nogil: return _call2(8, v, x)
cdef double gammainc(double a, double x) noexcept nogil: return _call2(9, a, x)
cdef double gammaincc(double a, double x) noexcept nogil: return _call2(10, a, x)
cdef double boxcox(double x, double lmbda) noexcept nogil: return _call2(11, x, lmbda)
cdef double boxcox1p(double x, double lmbda) noexcept nogil: return _call2(12, x, lmbda)


# Euler-Maclaurin's coefficients: (2k)! / B_2k
cdef double _A[12]
_A[:] = [12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
         7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
         -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18]
cdef double _MACHEP = 1.11022302462515654042e-16


cdef double zeta(double s, double q) noexcept nogil:
    """Hurwitz's zeta: sum over k >= 0 of (k + q)**-s, for s > 1."""
    cdef double a, b, k, total, t, w
    cdef int i
    if s == 1.0:
        return INFINITY
    if s < 1.0 or s != s or q != q:
        return NAN
    if q <= 0.0:
        if q == floor(q):
            return INFINITY
        if s != floor(s):
            return NAN      # q**-s is not real
    if q > 1e8:
        return (1.0 / (s - 1.0) + 1.0 / (2.0 * q)) * pow(q, 1.0 - s)
    total = pow(q, -s)
    a = q
    i = 0
    b = 0.0
    while i < 9 or a <= 9.0:
        i += 1
        a += 1.0
        b = pow(a, -s)
        total += b
        if fabs(b / total) < _MACHEP:
            return total
    w = a
    total += b * w / (s - 1.0)
    total -= 0.5 * b
    a = 1.0
    k = 0.0
    for i in range(12):
        a *= s + k
        b /= w
        t = a * b / _A[i]
        total += t
        if fabs(t / total) < _MACHEP:
            return total
        k += 1.0
        a *= s + k
        b /= w
        k += 1.0
    return total


cdef double polygamma(int n, double x) noexcept nogil:
    """psi^(n)(x), the n-th derivative of digamma, for n >= 1."""
    return (-1.0 if n % 2 == 0 else 1.0) * tgamma(n + 1.0) * zeta(n + 1.0, x)

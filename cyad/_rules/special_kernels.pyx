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

The functions of an integer order n (yn, kn, expn: SciPy's kernels take a C long) take
it as a double and truncate it toward zero, as their ufuncs do with a float order (without
the ufuncs' warning); a NaN order gives NaN.

The spherical Bessel functions j_n, y_n, i_n and k_n (spherical_jn, ...) are the kernels of
cython_special's spherical_jn, ... of a double z, whose optional argument `derivative`
(Cython's struct of the optional arguments given) selects the derivative; their order is
truncated toward zero as the other integer orders. At a real x they give what SciPy's
Python functions (scipy/special/_spherical_bessel.py) give: the kernel for x >= 0, below
it the reflection j_n(-x) = (-1)^n j_n(x) (i_n likewise, y_n with the opposite sign; a
derivative's sign flips once more), and k_n as the real part of its kernel of a complex z.

Hurwitz's zeta(s, q), which cython_special does not export, is the algorithm of SciPy's
(Cephes') `zeta`: Euler-Maclaurin summation; it gives the polygamma functions
(psi^(n)(x) = (-1)^(n+1) n! zeta(n+1, x)) that the derivatives of gammaln, digamma and
betaln need.

The partials in m of the incomplete elliptic integrals F(phi|m) (ellipkinc) and E(phi|m)
(ellipeinc) are Carlson's R_D: with s, c = sin(phi), cos(phi) and D = 1 - m s^2,

    dF/dm = s^3 R_D(c^2, 1, D) / 6,      dE/dm = -s^3 R_D(c^2, D, 1) / 6

on |phi| <= pi/2 (exact, also at m = 0), and each period pi of phi adds 2 K'(m) (2 E'(m)),
the partial of the complete integral (phi = pi/2). Their partials in m,

    d2F/dm2 = (F + 4 (2m - 1) dF/dm - s c / D^(3/2)) / (4 m (1 - m)),
    d2E/dm2 = -(dF/dm + dE/dm) / (2 m),

cancel where |m| s^2 is small (their numerators vanish with m s^2): there they are the
integrals over (0, phi) of (3/4) sin^4 / D^(5/2) and -(1/4) sin^4 / D^(3/2), by 32-point
Gauss-Legendre quadrature (exact to rounding while D >= 1/2 on the interval).
"""
from libc.math cimport (INFINITY, M_PI, NAN, cos, fabs, floor, fmod, isnan, pow, rint, sin,
                        sqrt, tgamma)

from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer

ctypedef double (*kernel1)(double, int) noexcept nogil
ctypedef double (*kernel2)(double, double, int) noexcept nogil
ctypedef double (*kernel_n)(long, double, int) noexcept nogil
ctypedef double (*kernel3)(double, double, double, int) noexcept nogil
ctypedef double (*kernel4)(double, double, double, double, int) noexcept nogil


ctypedef struct _optional_derivative:
    # Cython's optional arguments of a cpdef function: how many are given, and `derivative`
    int given
    int derivative


ctypedef double (*kernel_spherical)(Py_ssize_t, double, int,
                                    _optional_derivative*) noexcept nogil
ctypedef double complex (*kernel_spherical_complex)(Py_ssize_t, double complex, int,
                                                    _optional_derivative*) noexcept nogil

# the kernels by name, in the order of their slots below
_UNARY = ("erf", "erfc", "erfinv", "erfcx", "ndtr", "log_ndtr", "ndtri", "expit", "logit",
          "log_expit", "gammaln", "gamma", "loggamma", "psi", "entr", "i0", "i0e", "i1", "i1e",
          "j0", "j1", "k0", "k1", "k0e", "k1e", "y0", "y1", "gammasgn", "rgamma", "erfcinv",
          "dawsn", "exp1", "expi", "spence", "ellipk", "ellipe")
_BINARY = ("betaln", "beta", "xlogy", "xlog1py", "rel_entr", "kl_div", "iv", "ive", "jv",
           "gammainc", "gammaincc", "boxcox", "boxcox1p", "jve", "yv", "yve", "kv", "kve",
           "ellipkinc", "ellipeinc", "struve", "modstruve")
_INTEGER_ORDER = ("yn", "kn", "expn")
_TERNARY = ("elliprd",)
_QUATERNARY = ("hyp2f1",)
_SPHERICAL = ("spherical_jn", "spherical_yn", "spherical_in", "spherical_kn")
_SIGNATURE1 = b"double (double, int __pyx_skip_dispatch)"
_SIGNATURE2 = b"double (double, double, int __pyx_skip_dispatch)"
_SIGNATURE_N = b"double (long, double, int __pyx_skip_dispatch)"
_SIGNATURE3 = b"double (double, double, double, int __pyx_skip_dispatch)"
_SIGNATURE4 = b"double (double, double, double, double, int __pyx_skip_dispatch)"

cdef kernel1 _kernels1[36]
cdef kernel2 _kernels2[22]
cdef kernel_n _kernels_n[3]
cdef kernel3 _kernels3[1]
cdef kernel4 _kernels4[1]
cdef kernel_spherical _kernels_spherical[4]
cdef kernel_spherical_complex _kernel_kn_complex[1]
cdef bint _loaded = False
assert (len(_UNARY), len(_BINARY), len(_INTEGER_ORDER), len(_TERNARY), len(_QUATERNARY)) == \
    (36, 22, 3, 1, 1)

# Gauss-Legendre nodes and weights on (-1, 1), 32 points (set with the kernels)
cdef double _NODES[32]
cdef double _WEIGHTS[32]


cdef void* _pointer(dict capi, str name, bytes signature) except NULL:
    for key in (name, "__pyx_fuse_0" + name, "__pyx_fuse_1" + name, "__pyx_fuse_2" + name):
        capsule = capi.get(key)
        if capsule is not None and PyCapsule_GetName(capsule) == signature:
            return PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))
    raise ImportError(f"scipy.special.cython_special has no double {name}")


cdef void* _spherical_pointer(dict capi, str name, str number) except NULL:
    # cython_special's `name` of a `number` z (its C type: double, __pyx_t_double_complex) and
    # n, which older SciPy declares a long (taken where that is a Py_ssize_t)
    orders = ("Py_ssize_t", "long") if sizeof(long) == sizeof(Py_ssize_t) else ("Py_ssize_t",)
    for fuse in ("__pyx_fuse_0", "__pyx_fuse_1"):
        capsule = capi.get(fuse + name)
        for order in orders:
            signature = (f"{number} ({order}, {number}, int __pyx_skip_dispatch, struct {fuse}"
                         f"__pyx_opt_args_5scipy_7special_14cython_special_{name} "
                         "*__pyx_optional_args)").encode()
            if capsule is not None and PyCapsule_GetName(capsule) == signature:
                return PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))
    raise ImportError(f"scipy.special.cython_special has no {number} {name}")


cdef void _load() noexcept nogil:
    # the kernels, once; a failed look-up (no SciPy) leaves them unset: NaN
    global _loaded
    with gil:
        if _loaded:
            return
        from numpy.polynomial.legendre import leggauss
        nodes, weights = leggauss(32)
        for i in range(32):
            _NODES[i] = nodes[i]
            _WEIGHTS[i] = weights[i]
        try:
            from scipy.special.cython_special import __pyx_capi__ as capi
            for i, name in enumerate(_UNARY):
                _kernels1[i] = <kernel1>_pointer(capi, name, _SIGNATURE1)
            for i, name in enumerate(_BINARY):
                _kernels2[i] = <kernel2>_pointer(capi, name, _SIGNATURE2)
            for i, name in enumerate(_INTEGER_ORDER):
                _kernels_n[i] = <kernel_n>_pointer(capi, name, _SIGNATURE_N)
            _kernels3[0] = <kernel3>_pointer(capi, _TERNARY[0], _SIGNATURE3)
            _kernels4[0] = <kernel4>_pointer(capi, _QUATERNARY[0], _SIGNATURE4)
        except ImportError:
            for i in range(len(_UNARY)):
                _kernels1[i] = NULL
            for i in range(len(_BINARY)):
                _kernels2[i] = NULL
            for i in range(len(_INTEGER_ORDER)):
                _kernels_n[i] = NULL
            _kernels3[0] = NULL
            _kernels4[0] = NULL
        try:
            from scipy.special.cython_special import __pyx_capi__ as capi
            for i, name in enumerate(_SPHERICAL):
                _kernels_spherical[i] = <kernel_spherical>_spherical_pointer(capi, name, "double")
            _kernel_kn_complex[0] = <kernel_spherical_complex>_spherical_pointer(
                capi, "spherical_kn", "__pyx_t_double_complex")
        except ImportError:
            for i in range(len(_SPHERICAL)):
                _kernels_spherical[i] = NULL
            _kernel_kn_complex[0] = NULL
        _loaded = True


cdef inline double _call1(int k, double x) noexcept nogil:
    if not _loaded:
        _load()
    return NAN if _kernels1[k] == NULL else _kernels1[k](x, 0)


cdef inline double _call2(int k, double a, double b) noexcept nogil:
    if not _loaded:
        _load()
    return NAN if _kernels2[k] == NULL else _kernels2[k](a, b, 0)


cdef inline double _call_n(int k, double n, double x) noexcept nogil:
    # the order truncated toward zero, as the ufuncs' float loops do; NaN for a NaN order
    if not _loaded:
        _load()
    if _kernels_n[k] == NULL or isnan(n):
        return NAN
    n = 4e18 if n > 4e18 else (-4e18 if n < -4e18 else n)
    return _kernels_n[k](<long>n, x, 0)


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
cdef double k0(double x) noexcept nogil: return _call1(21, x)
cdef double k1(double x) noexcept nogil: return _call1(22, x)
cdef double k0e(double x) noexcept nogil: return _call1(23, x)
cdef double k1e(double x) noexcept nogil: return _call1(24, x)
cdef double y0(double x) noexcept nogil: return _call1(25, x)
cdef double y1(double x) noexcept nogil: return _call1(26, x)
cdef double gammasgn(double x) noexcept nogil: return _call1(27, x)
cdef double rgamma(double x) noexcept nogil: return _call1(28, x)
cdef double erfcinv(double x) noexcept nogil: return _call1(29, x)
cdef double dawsn(double x) noexcept nogil: return _call1(30, x)
cdef double exp1(double x) noexcept nogil: return _call1(31, x)
cdef double expi(double x) noexcept nogil: return _call1(32, x)
cdef double spence(double x) noexcept nogil: return _call1(33, x)
cdef double ellipk(double m) noexcept nogil: return _call1(34, m)
cdef double ellipe(double m) noexcept nogil: return _call1(35, m)
cdef double jve(double v, double x) noexcept nogil: return _call2(13, v, x)
cdef double yv(double v, double x) noexcept nogil: return _call2(14, v, x)
cdef double yve(double v, double x) noexcept nogil: return _call2(15, v, x)
cdef double kv(double v, double x) noexcept nogil: return _call2(16, v, x)
cdef double kve(double v, double x) noexcept nogil: return _call2(17, v, x)
cdef double ellipkinc(double phi, double m) noexcept nogil: return _call2(18, phi, m)
cdef double ellipeinc(double phi, double m) noexcept nogil: return _call2(19, phi, m)
cdef double struve(double v, double x) noexcept nogil: return _call2(20, v, x)
cdef double modstruve(double v, double x) noexcept nogil: return _call2(21, v, x)
cdef double yn(double n, double x) noexcept nogil: return _call_n(0, n, x)
cdef double kn(double n, double x) noexcept nogil: return _call_n(1, n, x)
cdef double expn(double n, double x) noexcept nogil: return _call_n(2, n, x)


cdef double _spherical(int k, double n, double x, bint derivative) noexcept nogil:
    # the k-th of _SPHERICAL at x as SciPy's Python function (the module's docstring)
    cdef _optional_derivative optional
    cdef Py_ssize_t order
    cdef double sign
    if not _loaded:
        _load()
    if _kernels_spherical[k] == NULL or isnan(n):
        return NAN
    n = 4e18 if n > 4e18 else (-4e18 if n < -4e18 else n)
    order = <Py_ssize_t>n
    optional.given = 1
    optional.derivative = derivative
    if not x < 0.0:
        return _kernels_spherical[k](order, x, 0, &optional)
    if k == 3:
        return _kernel_kn_complex[0](order, x, 0, &optional).real
    # (the parity of n as given, as SciPy's: a non-integer n counts as odd)
    sign = (1.0 if fmod(n, 2.0) == 0.0 else -1.0) * (-1.0 if k == 1 else 1.0)
    return (-sign if derivative else sign) * _kernels_spherical[k](order, -x, 0, &optional)


cdef double spherical_jn(double n, double x, bint derivative=False) noexcept nogil:
    return _spherical(0, n, x, derivative)


cdef double spherical_yn(double n, double x, bint derivative=False) noexcept nogil:
    return _spherical(1, n, x, derivative)


cdef double spherical_in(double n, double x, bint derivative=False) noexcept nogil:
    return _spherical(2, n, x, derivative)


cdef double spherical_kn(double n, double x, bint derivative=False) noexcept nogil:
    return _spherical(3, n, x, derivative)


cdef double elliprd(double x, double y, double z) noexcept nogil:
    if not _loaded:
        _load()
    return NAN if _kernels3[0] == NULL else _kernels3[0](x, y, z, 0)


cdef double hyp2f1(double a, double b, double c, double z) noexcept nogil:
    if not _loaded:
        _load()
    return NAN if _kernels4[0] == NULL else _kernels4[0](a, b, c, z, 0)


# -- the partials in m of the incomplete elliptic integrals (the module's docstring) ------------

cdef double ellipkinc_dm(double phi, double m) noexcept nogil:
    """dF(phi|m)/dm."""
    cdef double k = rint(phi / M_PI)
    cdef double r = phi - k * M_PI
    cdef double s = sin(r), c = cos(r)
    cdef double partial = s * s * s * elliprd(c * c, 1.0, 1.0 - m * s * s) / 6.0
    if k != 0.0:    # 2 K'(m) per period
        partial += k * elliprd(0.0, 1.0, 1.0 - m) / 3.0
    return partial


cdef double ellipeinc_dm(double phi, double m) noexcept nogil:
    """dE(phi|m)/dm."""
    cdef double k = rint(phi / M_PI)
    cdef double r = phi - k * M_PI
    cdef double s = sin(r), c = cos(r)
    cdef double partial = -s * s * s * elliprd(c * c, 1.0 - m * s * s, 1.0) / 6.0
    if k != 0.0:    # 2 E'(m) per period
        partial -= k * elliprd(0.0, 1.0 - m, 1.0) / 3.0
    return partial


cdef double _sin4_integral(double r, double m, double power) noexcept nogil:
    # the integral over (0, r) of sin(t)^4 / (1 - m sin(t)^2)^power
    cdef double total = 0.0, s2
    cdef int i
    for i in range(32):
        s2 = sin(0.5 * r * (_NODES[i] + 1.0))
        s2 *= s2
        total += _WEIGHTS[i] * s2 * s2 / pow(1.0 - m * s2, power)
    return 0.5 * r * total


cdef double ellipkinc_dmm(double phi, double m) noexcept nogil:
    """d2F(phi|m)/dm2."""
    cdef double k = rint(phi / M_PI)
    cdef double r = phi - k * M_PI
    cdef double s = sin(r), c = cos(r)
    cdef double d = 1.0 - m * s * s, partial
    if not _loaded:
        _load()
    if fabs(m) * s * s < 0.5:
        partial = 0.75 * _sin4_integral(r, m, 2.5)
    else:
        partial = (ellipkinc(r, m) + 4.0 * (2.0 * m - 1.0) * ellipkinc_dm(r, m)
                   - s * c / (d * sqrt(d))) / (4.0 * m * (1.0 - m))
    if k != 0.0:    # 2 K''(m) per period
        partial += k * (9.0 * M_PI / 32.0) * hyp2f1(2.5, 2.5, 3.0, m)
    return partial


cdef double ellipeinc_dmm(double phi, double m) noexcept nogil:
    """d2E(phi|m)/dm2."""
    cdef double k = rint(phi / M_PI)
    cdef double r = phi - k * M_PI
    cdef double s = sin(r), partial
    if not _loaded:
        _load()
    if fabs(m) * s * s < 0.5:
        partial = -0.25 * _sin4_integral(r, m, 1.5)
    else:
        partial = -(ellipkinc_dm(r, m) + ellipeinc_dm(r, m)) / (2.0 * m)
    if k != 0.0:    # 2 E''(m) per period
        partial -= k * (3.0 * M_PI / 32.0) * hyp2f1(1.5, 2.5, 3.0, m)
    return partial


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

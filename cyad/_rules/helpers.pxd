# Helper functions of the rule table (cyad/_rules/table.py), for the generated rule code
# (cyad/_rules/rules.pxd, which cimports them all): the parts of a rule that do not fit one
# expression, and `careful_product`, with which every path multiplies a derivative
# coefficient by a tangent.

# cython: cdivision=True
# Inline functions are compiled into every module that cimports them; the directive
# keeps their divisions plain C divisions (IEEE inf and nan) whatever that module's.

from libc.math cimport (exp, exp2, expm1, log, log1p, pow, fabs, isnan, INFINITY, M_LN2,
                        M_SQRT1_2, M_2_SQRTPI, M_PI, floor, fmod, copysign, sin, cos, trunc)

from cyad._rules cimport special_kernels as sc


cdef inline double careful_product(double d, double p) noexcept nogil:
    # d * p for a derivative coefficient d and a tangent p; a zero tangent gives 0
    # even where d is infinite or NaN
    return 0.0 if p == 0.0 else d * p


cdef inline double _sign(double x) noexcept nogil:
    if isnan(x):
        return x
    return (x > 0) - (x < 0)


cdef inline double _pow_da(double a, double b) noexcept nogil:
    return 0.0 if b == 0.0 else b * pow(a, b - 1.0)

cdef inline double _pow_const(double a, double b, double* da) noexcept nogil:
    # a**b and d/da for a constant exponent: small integers as products (exact and
    # without two pow calls), the rest through _pow_da
    if b == 2.0:
        da[0] = 2.0 * a
        return a * a
    if b == 3.0:
        da[0] = 3.0 * a * a
        return a * a * a
    if b == 1.0:
        da[0] = 1.0
        return a
    da[0] = _pow_da(a, b)
    return pow(a, b)

cdef inline double _pow_db(double a, double b, double v) noexcept nogil:
    return 0.0 if (a == 0.0 and b > 0.0) else log(a) * v

cdef inline double _pow_daa(double a, double b) noexcept nogil:
    return 0.0 if (b == 0.0 or b == 1.0) else b * (b - 1.0) * pow(a, b - 2.0)

cdef inline double _pow_dab(double a, double b) noexcept nogil:
    # d/db (b a**(b-1)) = a**(b-1) (1 + b log a), with its limit 0 at a = 0 for b > 1
    return 0.0 if (a == 0.0 and b > 1.0) else pow(a, b - 1.0) * (1.0 + b * log(a))

cdef inline double _pow_dbb(double a, double b, double v) noexcept nogil:
    return 0.0 if (a == 0.0 and b > 0.0) else log(a) * log(a) * v

cdef inline double _max_share(double a, double b) noexcept nogil:
    # d maximum(a, b) / da; a NaN operand is the one that propagates
    if a > b or isnan(a):
        return 1.0
    if a < b or isnan(b):
        return 0.0
    return 0.5

cdef inline double _min_share(double a, double b) noexcept nogil:
    # d minimum(a, b) / da
    if a < b or isnan(a):
        return 1.0
    if a > b or isnan(b):
        return 0.0
    return 0.5

cdef inline double _fmax_share(double a, double b) noexcept nogil:
    # d fmax(a, b) / da; fmax ignores a NaN operand
    return 0.0 if isnan(a) else (1.0 if isnan(b) else _max_share(a, b))

cdef inline double _fmin_share(double a, double b) noexcept nogil:
    return 0.0 if isnan(a) else (1.0 if isnan(b) else _min_share(a, b))

cdef inline double _pick(double a, double b, double share) noexcept nogil:
    return a if share >= 0.5 else b

cdef inline double _logaddexp(double a, double b) noexcept nogil:
    if a == b:
        return a + M_LN2
    return (a if a > b else b) + log1p(exp(-fabs(a - b)))

cdef inline double _logaddexp2(double a, double b) noexcept nogil:
    if a == b:
        return a + 1.0
    return (a if a > b else b) + log1p(exp2(-fabs(a - b))) / M_LN2

cdef inline double _log_ndtr_d(double x) noexcept nogil:
    # phi(x) / Phi(x) = sqrt(2/pi) / erfcx(-x/sqrt(2)): no underflow of phi and Phi at
    # very negative x, where it tends to -x
    return (M_2_SQRTPI * M_SQRT1_2) / sc.erfcx(-x * M_SQRT1_2)

cdef inline double _gammainc_dx(double a, double x) noexcept nogil:
    # d/dx of the regularized lower incomplete gamma P(a, x): x**(a-1) e**-x / Gamma(a),
    # through logarithms (no overflow of x**(a-1) or Gamma(a) for large a)
    if x == 0.0:
        return 1.0 if a == 1.0 else (0.0 if a > 1.0 else INFINITY)
    return exp((a - 1.0) * log(x) - x - sc.gammaln(a))

cdef inline double _boxcox_dl(double l, double lmbda) noexcept nogil:
    # d/dlmbda of boxcox = (e**t - 1) / lmbda, t = lmbda l (l = log x): l**2 phi(t) with
    # phi(t) = (t e**t - (e**t - 1)) / t**2 = sum over k >= 2 of (k - 1) t**(k-2) / k!; by
    # the series where the closed form cancels (exact at lmbda = 0: l**2 / 2)
    cdef double t = lmbda * l, term = 0.5, total = 0.0
    cdef int k
    if fabs(t) >= 2.0:
        return l * l * (t * exp(t) - expm1(t)) / (t * t)
    for k in range(2, 40):
        # term = t**(k-2) / k!
        total += (k - 1) * term
        term *= t / (k + 1)
    return l * l * total

cdef inline double _boxcox_dll(double l, double lmbda) noexcept nogil:
    # d2/dlmbda2 of boxcox: l**3 psi(t), psi(t) = (t (t - 2) e**t + 2 (e**t - 1)) / t**3
    # = sum over k >= 3 of (k - 1)(k - 2) t**(k-3) / k! (1/3 at lmbda = 0)
    cdef double t = lmbda * l, term = 1.0 / 6.0, total = 0.0
    cdef int k
    if fabs(t) >= 2.0:
        return l * l * l * (t * (t - 2.0) * exp(t) + 2.0 * expm1(t)) / (t * t * t)
    for k in range(3, 40):
        # term = t**(k-3) / k!
        total += (k - 1) * (k - 2) * term
        term *= t / (k + 1)
    return l * l * l * total

cdef inline double _floor_divide(double a, double b) noexcept nogil:
    # NumPy's npy_floor_divide (npy_divmod's quotient): floor((a - fmod(a, b)) / b),
    # corrected where the remainder takes the divisor's sign, rounded to the nearest
    # integer where the division is inexact
    cdef double mod, div, q
    if b == 0.0:
        return a / b
    mod = fmod(a, b)
    div = (a - mod) / b
    if mod != 0.0 and (b < 0.0) != (mod < 0.0):
        div -= 1.0
    if div == 0.0:
        return copysign(0.0, a / b)
    q = floor(div)
    return q + 1.0 if div - q > 0.5 else q


cdef inline double _remainder(double a, double b) noexcept nogil:
    # NumPy's npy_divmod's remainder: fmod(a, b) moved to the divisor's sign
    cdef double mod = fmod(a, b)
    if b == 0.0:
        return mod
    if mod != 0.0:
        return mod + b if (b < 0.0) != (mod < 0.0) else mod
    return copysign(0.0, b)


cdef inline double _heaviside(double x, double h0) noexcept nogil:
    if isnan(x):
        return x
    return h0 if x == 0.0 else (0.0 if x < 0.0 else 1.0)


cdef inline double _rgamma_d2(double x, double v) noexcept nogil:
    # (1/Gamma)'' = v (psi^2 - psi') for x >= 1/2, v = 1/Gamma(x); below (where psi^2 and
    # psi' cancel near the poles of Gamma) by the reflection 1/Gamma(x) = sin(pi x) g(x),
    # g(x) = Gamma(1 - x) / pi: g (sin(pi x) (psi(1-x)^2 + psi'(1-x) - pi^2) - 2 pi cos(pi x)
    # psi(1-x)), exact at the poles too (-2 (-1)^n n! psi(n + 1) at x = -n)
    cdef double p, q
    if x >= 0.5:
        p = sc.psi(x)
        return v * (p * p - sc.polygamma(1, x))
    q = sc.psi(1.0 - x)
    return sc.gamma(1.0 - x) / M_PI * (sin(M_PI * x) * (q * q + sc.polygamma(1, 1.0 - x)
                                                        - M_PI * M_PI)
                                       - 2.0 * M_PI * cos(M_PI * x) * q)

cdef inline double _spence_d2(double x) noexcept nogil:
    # d/dx of spence' = log(x) / (1 - x): ((1 - x) / x + log x) / (1 - x)^2, which cancels
    # near x = 1; there by its series in t = x - 1, the sum over k >= 1 of
    # (-1)^(k+1) k t^(k-1) / (k + 1) (1/2 at x = 1)
    cdef double t = x - 1.0, total = 0.0, power = 1.0
    cdef int k
    if not fabs(t) < 0.25:
        return (log(x) - t / x) / (t * t)
    for k in range(1, 40):
        total += (k if k % 2 else -k) * power / (k + 1.0)
        power *= t
    return total

# erfcx(x) ~ sum over n of (-1)^n a_n / (x sqrt(pi)) and dawsn(x) ~ sum of a_n / (2 x), with
# a_n = (2n - 1)!! / (2 x^2)^n, for large x: their derivatives 2 x erfcx(x) - 2 / sqrt(pi)
# and 1 - 2 x dawsn(x) cancel there (relative error about 2 x^2 eps, x^4 eps at second
# order), and for |x| >= 7 come from these series (48 terms: while they decrease, and to
# rounding from x = 7 on)

cdef inline double _erfcx_d(double x, double v) noexcept nogil:
    # (2 / sqrt(pi)) sum over n >= 1 of (-1)^n a_n
    cdef double u, a = 1.0, total = 0.0
    cdef int n
    if not x >= 7.0:
        return 2.0 * x * v - M_2_SQRTPI
    u = 0.5 / (x * x)
    for n in range(1, 49):
        a *= -(2 * n - 1) * u
        total += a
    return M_2_SQRTPI * total

cdef inline double _erfcx_d2(double x, double v, double d) noexcept nogil:
    # 2 erfcx + 2 x erfcx'; (1 / (sqrt(pi) x^3)) sum over n >= 0 of (-1)^n (2n+1)(2n+2) a_n
    cdef double u, a = 1.0, total = 2.0
    cdef int n
    if not x >= 7.0:
        return 2.0 * v + 2.0 * x * d
    u = 0.5 / (x * x)
    for n in range(1, 48):
        a *= -(2 * n - 1) * u
        total += (2 * n + 1) * (2 * n + 2) * a
    return 0.5 * M_2_SQRTPI * total / (x * x * x)

cdef inline double _dawsn_d(double x, double v) noexcept nogil:
    # -(sum over n >= 1 of a_n)
    cdef double u, a = 1.0, total = 0.0
    cdef int n
    if not fabs(x) >= 7.0:
        return 1.0 - 2.0 * x * v
    u = 0.5 / (x * x)
    for n in range(1, 49):
        a *= (2 * n - 1) * u
        total += a
    return -total

cdef inline double _dawsn_d2(double x, double v, double d) noexcept nogil:
    # -2 dawsn - 2 x dawsn'; (1 / (2 x^3)) sum over n >= 0 of (2n+1)(2n+2) a_n
    cdef double u, a = 1.0, total = 2.0
    cdef int n
    if not fabs(x) >= 7.0:
        return -2.0 * v - 2.0 * x * d
    u = 0.5 / (x * x)
    for n in range(1, 48):
        a *= (2 * n - 1) * u
        total += (2 * n + 1) * (2 * n + 2) * a
    return 0.5 * total / (x * x * x)

cdef inline double _spherical_d2(double n, double s, double below, double at,
                                 double above) noexcept nogil:
    # f_n'' of a spherical Bessel function of order n from f_n-2, f_n and f_n+2 (below, at,
    # above; f_n''' from their derivatives): the recurrence (2n + 1) f_n' = n f_n-1 - (n + 1) f_n+1
    # of j_n and y_n applied twice (s = 1), or that of i_n and k_n (n f_n-1 + (n + 1) f_n+1 and
    # its negative: s = -1). Unlike their equation x^2 f'' + 2x f' + (s x^2 - n(n+1)) f = 0 it
    # neither cancels near x = 0 nor is 0/0 there. For n < 2 the caller passes 0 for f_n-2,
    # whose coefficient is 0 (SciPy's NaN of a negative order would make the sum NaN).
    n = trunc(n)
    return (n * (n - 1.0) / (2.0 * n - 1.0) * below
            - s * (n * n / (2.0 * n - 1.0) + (n + 1.0) * (n + 1.0) / (2.0 * n + 3.0)) * at
            + (n + 1.0) * (n + 2.0) / (2.0 * n + 3.0) * above) / (2.0 * n + 1.0)

# The one table of elementary derivative rules.
#
# Every elementary function cyad differentiates is defined here, once: its value
# and its first derivative(s) at a point, in double precision. Every path - the
# dual arrays handed to Python callables, the chunk kernels, C-level users -
# goes through `unary_rule` and `binary_rule`; nothing else encodes calculus.
#
# A unary rule returns f(x) and stores f'(x) in d[0]. A binary rule returns
# f(a, b) and stores df/da in da[0] and df/db in db[0]. The kernels use only the
# partial of an operand that carries derivatives, so the POWER_* variants exist
# to avoid computing a derivative nobody reads (a log for x**2). For second-order
# differentiation, `unary_second` and `binary_second` are the table's second
# column: the second derivatives, from the values the first column computed.
#
# Conventions where a function is not differentiable:
#   abs, sign-like kinks    abs'(0) = 0 (the midpoint of the subgradient [-1, 1]);
#                           hypot at (0, 0) has zero partials for the same reason.
#   maximum/minimum ties    each operand gets 1/2 (so max(x, x) has derivative 1);
#                           fmax/fmin pick the non-NaN operand. clip(x, lo, hi) is
#                           minimum(maximum(x, lo), hi), so at x == lo it is 1/2.
#   maximum/minimum NaN     the NaN operand propagates, and so does its derivative (1, other 0).
#   sqrt, cbrt at 0         the derivative is +inf; a lane whose incoming tangent is 0
#                           contributes 0, never 0 * inf = nan (careful_product below).
#                           (So does any other infinite or NaN coefficient.)
#   x**y at x = 0           d/dx = 0 when y == 0 (x**0 is constant 1), else y*x**(y-1)
#                           (1 for y == 1, 0 for y > 1, +inf for 0 < y < 1);
#                           d/dy = 0 when y > 0 (the limit of x**y log x), else log(x)*x**y.
#                           Second partials likewise: d2/dx2 = 0 for y in {0, 1}; at x = 0,
#                           d2/dxdy = 0 for y > 1 and d2/dy2 = 0 for y > 0 (their limits).
#   x**y at x < 0           d/dx = y*x**(y-1) (finite for integer y); d/dy = nan, since x**y
#                           is real only at integer y.
#   arctan2 at (0, 0)       both partials nan: the angle jumps there.
#   sign, floor, ceil,      derivative 0 everywhere (also at their jumps).
#   rint, trunc
#
# Derivatives keep full relative precision where the textbook form cancels:
# expm1' = exp (not expm1 + 1), tanh' = 1/cosh^2 (not 1 - tanh^2), and 1 - x^2 is
# computed as (1 - x)(1 + x) for arcsin, arccos and arctanh near |x| = 1.

# cython: cdivision=True
# Inline functions are compiled into every module that cimports them; the directive
# keeps their divisions plain C divisions (IEEE inf and nan) whatever that module's.

from libc.math cimport (
    sin, cos, tan, asin, acos, atan, atan2, sinh, cosh, tanh, asinh, acosh, atanh,
    exp, exp2, expm1, log, log2, log10, log1p, sqrt, cbrt, pow, hypot, fabs,
    floor, ceil, rint, trunc, isnan, M_PI, M_LN2, M_LN10, NAN,
)

cdef enum UnaryOp:
    NEGATIVE, POSITIVE, ABSOLUTE, SQRT, CBRT, SQUARE, RECIPROCAL,
    EXP, EXP2, EXPM1, LOG, LOG2, LOG10, LOG1P,
    SIN, COS, TAN, ARCSIN, ARCCOS, ARCTAN,
    SINH, COSH, TANH, ARCSINH, ARCCOSH, ARCTANH,
    DEG2RAD, RAD2DEG, SIGN, FLOOR, CEIL, RINT, TRUNC,

cdef enum BinaryOp:
    ADD, SUBTRACT, MULTIPLY, DIVIDE,
    POWER, POWER_CONST_EXPONENT, POWER_CONST_BASE,
    ARCTAN2, HYPOT, MAXIMUM, MINIMUM, FMAX, FMIN, LOGADDEXP, LOGADDEXP2,


cdef inline double _sign(double x) noexcept nogil:
    if isnan(x):
        return x
    return (x > 0) - (x < 0)


cdef inline double unary_rule(int op, double x, double* d) noexcept nogil:
    cdef double v
    # op                  value f(x)                   derivative f'(x)
    if op == NEGATIVE:    v = -x;                      d[0] = -1.0
    elif op == POSITIVE:  v = x;                       d[0] = 1.0
    elif op == ABSOLUTE:  v = fabs(x);                 d[0] = _sign(x)
    elif op == SQRT:      v = sqrt(x);                 d[0] = 0.5 / v
    elif op == CBRT:      v = cbrt(x);                 d[0] = 1.0 / (3.0 * v * v)
    elif op == SQUARE:    v = x * x;                   d[0] = 2.0 * x
    elif op == RECIPROCAL: v = 1.0 / x;                d[0] = -v * v
    elif op == EXP:       v = exp(x);                  d[0] = v
    elif op == EXP2:      v = exp2(x);                 d[0] = v * M_LN2
    elif op == EXPM1:     v = expm1(x);                d[0] = exp(x)
    elif op == LOG:       v = log(x);                  d[0] = 1.0 / x
    elif op == LOG2:      v = log2(x);                 d[0] = 1.0 / (x * M_LN2)
    elif op == LOG10:     v = log10(x);                d[0] = 1.0 / (x * M_LN10)
    elif op == LOG1P:     v = log1p(x);                d[0] = 1.0 / (1.0 + x)
    elif op == SIN:       v = sin(x);                  d[0] = cos(x)
    elif op == COS:       v = cos(x);                  d[0] = -sin(x)
    elif op == TAN:       v = tan(x);                  d[0] = 1.0 + v * v
    elif op == ARCSIN:    v = asin(x);                 d[0] = 1.0 / sqrt((1.0 - x) * (1.0 + x))
    elif op == ARCCOS:    v = acos(x);                 d[0] = -1.0 / sqrt((1.0 - x) * (1.0 + x))
    elif op == ARCTAN:    v = atan(x);                 d[0] = 1.0 / (1.0 + x * x)
    elif op == SINH:      v = sinh(x);                 d[0] = cosh(x)
    elif op == COSH:      v = cosh(x);                 d[0] = sinh(x)
    elif op == TANH:      v = tanh(x);                 d[0] = 1.0 / (cosh(x) * cosh(x))
    elif op == ARCSINH:   v = asinh(x);                d[0] = 1.0 / hypot(x, 1.0)
    elif op == ARCCOSH:   v = acosh(x);                d[0] = 1.0 / (sqrt(x - 1.0) * sqrt(x + 1.0))
    elif op == ARCTANH:   v = atanh(x);                d[0] = 1.0 / ((1.0 - x) * (1.0 + x))
    elif op == DEG2RAD:   v = x * (M_PI / 180.0);      d[0] = M_PI / 180.0
    elif op == RAD2DEG:   v = x * (180.0 / M_PI);      d[0] = 180.0 / M_PI
    elif op == SIGN:      v = _sign(x);                d[0] = 0.0
    elif op == FLOOR:     v = floor(x);                d[0] = 0.0
    elif op == CEIL:      v = ceil(x);                 d[0] = 0.0
    elif op == RINT:      v = rint(x);                 d[0] = 0.0
    elif op == TRUNC:     v = trunc(x);                d[0] = 0.0
    else:                 v = NAN;                     d[0] = NAN
    return v


cdef inline double unary_second(int op, double x, double v, double d) noexcept nogil:
    """f''(x) of a unary rule, from x, v = f(x) and d = f'(x) as unary_rule gives them.

    The second column of the table, for second-order differentiation; kinks and
    jumps (abs, sign, floor, ...) have 0, as their first derivatives do.
    """
    # op                                   second derivative f''(x)
    if op == SQRT:                         return -0.5 * d / x
    elif op == CBRT:                       return -2.0 * d / (3.0 * x)
    elif op == SQUARE:                     return 2.0
    elif op == RECIPROCAL:                 return -2.0 * d * v
    elif op == EXP or op == EXPM1:         return d
    elif op == EXP2:                       return d * M_LN2
    elif op == LOG or op == LOG1P:         return -d * d
    elif op == LOG2 or op == LOG10:        return -d / x
    elif op == SIN or op == COS:           return -v
    elif op == TAN:                        return 2.0 * v * d
    elif op == ARCSIN or op == ARCCOS:     return x * d * d * d
    elif op == ARCTAN:                     return -2.0 * x * d * d
    elif op == SINH or op == COSH:         return v
    elif op == TANH:                       return -2.0 * v * d
    elif op == ARCSINH or op == ARCCOSH:   return -x * d * d * d
    elif op == ARCTANH:                    return 2.0 * x * d * d
    return 0.0   # linear, piecewise linear or piecewise constant


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


cdef inline double binary_rule(int op, double a, double b, double* da, double* db) noexcept nogil:
    cdef double v
    # op                      value f(a, b)                  df/da                       df/db
    if op == ADD:             v = a + b;                     da[0] = 1.0;                db[0] = 1.0
    elif op == SUBTRACT:      v = a - b;                     da[0] = 1.0;                db[0] = -1.0
    elif op == MULTIPLY:      v = a * b;                     da[0] = b;                  db[0] = a
    elif op == DIVIDE:        v = a / b;                     da[0] = 1.0 / b;            db[0] = -v / b
    elif op == POWER:         v = pow(a, b);                 da[0] = _pow_da(a, b);   db[0] = _pow_db(a, b, v)
    elif op == POWER_CONST_EXPONENT: v = _pow_const(a, b, da);                       db[0] = 0.0
    elif op == POWER_CONST_BASE: v = pow(a, b);              da[0] = 0.0;                db[0] = _pow_db(a, b, v)
    elif op == ARCTAN2:       v = atan2(a, b);               da[0] = b / (a*a + b*b);    db[0] = -a / (a*a + b*b)
    elif op == HYPOT:         v = hypot(a, b);               da[0] = a / v if v else 0.0; db[0] = b / v if v else 0.0
    elif op == MAXIMUM:       da[0] = _max_share(a, b);      v = _pick(a, b, da[0]);     db[0] = 1.0 - da[0]
    elif op == MINIMUM:       da[0] = _min_share(a, b);      v = _pick(a, b, da[0]);     db[0] = 1.0 - da[0]
    elif op == FMAX:          da[0] = _fmax_share(a, b);     v = _pick(a, b, da[0]);     db[0] = 1.0 - da[0]
    elif op == FMIN:          da[0] = _fmin_share(a, b);     v = _pick(a, b, da[0]);     db[0] = 1.0 - da[0]
    elif op == LOGADDEXP:     v = _logaddexp(a, b);          da[0] = exp(a - v);         db[0] = exp(b - v)
    elif op == LOGADDEXP2:    v = _logaddexp2(a, b);         da[0] = exp2(a - v);        db[0] = exp2(b - v)
    else:                     v = NAN;                       da[0] = NAN;                db[0] = NAN
    return v


cdef inline double careful_product(double d, double p) noexcept nogil:
    # d * p for a derivative coefficient d and a tangent p; a zero tangent gives 0
    # even where d is infinite or NaN
    return 0.0 if p == 0.0 else d * p


cdef inline void binary_second(int op, double a, double b, double v, double da, double db,
                               double* daa, double* dab, double* dbb) noexcept nogil:
    """The second partials of a binary rule, from a, b, and v, da, db as binary_rule gives them."""
    cdef double r2 = a * a + b * b, pq = da * db
    daa[0] = 0.0
    dab[0] = 0.0
    dbb[0] = 0.0
    # op                                  d2f/da2                 d2f/dadb                 d2f/db2
    if op == MULTIPLY:                                             dab[0] = 1.0
    elif op == DIVIDE:                                             dab[0] = -1.0 / (b * b); dbb[0] = -2.0 * db / b
    elif op == POWER:                     daa[0] = _pow_daa(a, b); dab[0] = _pow_dab(a, b); dbb[0] = _pow_dbb(a, b, v)
    elif op == POWER_CONST_EXPONENT:      daa[0] = _pow_daa(a, b)
    elif op == POWER_CONST_BASE:                                                            dbb[0] = _pow_dbb(a, b, v)
    elif op == ARCTAN2:                   daa[0] = -2.0*a*b / (r2*r2); dab[0] = (a*a - b*b) / (r2*r2); dbb[0] = 2.0*a*b / (r2*r2)
    elif op == HYPOT and v != 0.0:        daa[0] = b*b / (v*v*v);  dab[0] = -a*b / (v*v*v); dbb[0] = a*a / (v*v*v)
    elif op == LOGADDEXP:                 daa[0] = pq;             dab[0] = -pq;            dbb[0] = pq
    elif op == LOGADDEXP2:                daa[0] = M_LN2 * pq;     dab[0] = -M_LN2 * pq;    dbb[0] = M_LN2 * pq
    # add, subtract, maximum, minimum, fmax, fmin: all second partials 0

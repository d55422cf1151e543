# Dual numbers for C-level code: write a function once on dual elements, get its
# derivatives with a compile-time lane count.
#
# An element is a struct {v; p[N]}: a value and N partials (derivative lanes), N in
# 1, 2, 4, 8, 16, in double (dual1 ... dual16) or float (dual1f ... dual16f). The fused
# type `dual` covers all ten, so one generic `cdef` function serves every lane count
# and dtype. Inside a specialisation n_lanes(a) == sizeof(a.p) // sizeof(a.p[0]) is
# a constant, and the C compiler unrolls the lane loops.
#
# Stable: the type and function names below, the struct layout {v; p[N]} (read a.v
# for the value, e.g. to branch), and the op codes UnaryOp.X and BinaryOp.X of the rule
# table (cimported here, so `from cyad.dual cimport *` brings them and `real`). The
# shorthands sqrt, exp, log, ... shadow libc.math's names; a module that needs both
# can `cimport cyad.dual as ad` and write ad.sqrt.
#
# Derivatives come only from the rule table (cyad._rules), with its conventions; in
# particular a lane whose tangent is 0 gets 0 even where the derivative coefficient is
# infinite or NaN (sqrt at 0), never 0 * inf = nan. Values and coefficients are computed
# in double; float elements round the results to float.
#
# Buffers follow the signature of cyad._wrapper: element i has the value x[i] and the
# partials dx[i * width : (i + 1) * width]. load and store move element i, lanes
# [lane0, lane0 + N), between a buffer and an element. Derivative propagation is linear
# in the tangents, so a width above 16 (a multiple of 8) is exactly processed by running
# the function once per block of 8 lanes; the values are recomputed for every block.
#
# Example: Robertson's kinetics, generic in the element type (`tag` only selects the
# specialisation) and dispatched on width in a function of cyad's signature.
#
#     from cyad.dual cimport *
#
#     cdef int robertson_lanes(dual* tag, const real* x, const real* dx, real* y, real* dy,
#                              Py_ssize_t width, Py_ssize_t lane0) noexcept nogil:
#         cdef dual u0, u1, u2, a, b, c
#         load(&u0, x, dx, 0, width, lane0)
#         load(&u1, x, dx, 1, width, lane0)
#         load(&u2, x, dx, 2, width, lane0)
#         a = mul_c(u0, 0.04)
#         b = mul_c(mul(u1, u2), 1e4)
#         c = mul_c(square(u1), 3e7)
#         store(sub(b, a), y, dy, 0, width, lane0)
#         store(sub(sub(a, b), c), y, dy, 1, width, lane0)
#         store(c, y, dy, 2, width, lane0)
#         return 0
#
#     cdef int robertson(const double* x, const double* dx, double* y, double* dy,
#                        Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
#                        void* context) noexcept nogil:
#         cdef Py_ssize_t lane0
#         cdef int status = 0
#         if width == 1:
#             return robertson_lanes(<dual1*>NULL, x, dx, y, dy, width, 0)
#         if width == 2:
#             return robertson_lanes(<dual2*>NULL, x, dx, y, dy, width, 0)
#         if width == 4:
#             return robertson_lanes(<dual4*>NULL, x, dx, y, dy, width, 0)
#         if width == 8:
#             return robertson_lanes(<dual8*>NULL, x, dx, y, dy, width, 0)
#         if width == 16:
#             return robertson_lanes(<dual16*>NULL, x, dx, y, dy, width, 0)
#         for lane0 in range(0, width, 8):
#             status = robertson_lanes(<dual8*>NULL, x, dx, y, dy, width, lane0)
#             if status:
#                 break
#         return status
#
# The float32 twin is the same dispatch with dual1f ... dual16f and float buffers.

# cython: cdivision=True
# (As in cyad._rules: plain C division whatever the cimporting module's directives.)

from libc.math cimport isfinite
from cyad._fused cimport real
from cyad._rules cimport UnaryOp, BinaryOp, unary_rule, binary_rule, careful_product


cdef struct dual1:
    double v
    double p[1]
cdef struct dual2:
    double v
    double p[2]
cdef struct dual4:
    double v
    double p[4]
cdef struct dual8:
    double v
    double p[8]
cdef struct dual16:
    double v
    double p[16]

cdef struct dual1f:
    float v
    float p[1]
cdef struct dual2f:
    float v
    float p[2]
cdef struct dual4f:
    float v
    float p[4]
cdef struct dual8f:
    float v
    float p[8]
cdef struct dual16f:
    float v
    float p[16]

ctypedef fused dual:
    dual1
    dual2
    dual4
    dual8
    dual16
    dual1f
    dual2f
    dual4f
    dual8f
    dual16f


cdef inline Py_ssize_t n_lanes(dual a) noexcept nogil:
    """The number of partials of a (a compile-time constant)."""
    return sizeof(a.p) // sizeof(a.p[0])


# -- buffers and constants -------------------------------------------------------------

cdef inline void load(dual* a, const real* x, const real* dx, Py_ssize_t i,
                      Py_ssize_t width, Py_ssize_t lane0) noexcept nogil:
    """a = element i of (x, dx), lanes [lane0, lane0 + N) of its row of width lanes."""
    cdef Py_ssize_t k
    a.v = x[i]
    for k in range(n_lanes(a[0])):
        a.p[k] = dx[i * width + lane0 + k]


cdef inline void store(dual a, real* y, real* dy, Py_ssize_t i,
                       Py_ssize_t width, Py_ssize_t lane0) noexcept nogil:
    """Element i of (y, dy), lanes [lane0, lane0 + N) of its row, = a."""
    cdef Py_ssize_t k
    y[i] = a.v
    for k in range(n_lanes(a)):
        dy[i * width + lane0 + k] = a.p[k]


cdef inline void constant(dual* a, double c) noexcept nogil:
    """a = c with zero partials."""
    cdef Py_ssize_t k
    a.v = c
    for k in range(n_lanes(a[0])):
        a.p[k] = 0


# -- rules on elements -----------------------------------------------------------------

cdef inline dual _scaled(double v, double d, dual a) noexcept nogil:
    # value v, partials d * a.p
    cdef dual r
    cdef Py_ssize_t k
    r.v = v
    if isfinite(d):
        for k in range(n_lanes(a)):
            r.p[k] = d * a.p[k]
    else:
        for k in range(n_lanes(a)):
            r.p[k] = careful_product(d, a.p[k])
    return r


cdef inline dual _combined(double v, double da, dual a, double db, dual b) noexcept nogil:
    # value v, partials da * a.p + db * b.p
    cdef dual r
    cdef Py_ssize_t k
    r.v = v
    if isfinite(da) and isfinite(db):
        for k in range(n_lanes(a)):
            r.p[k] = da * a.p[k] + db * b.p[k]
    else:
        for k in range(n_lanes(a)):
            r.p[k] = careful_product(da, a.p[k]) + careful_product(db, b.p[k])
    return r


cdef inline dual unary(int op, dual a) noexcept nogil:
    """op(a) for a UnaryOp."""
    cdef double d
    cdef double v = unary_rule(op, a.v, &d)
    return _scaled(v, d, a)


cdef inline dual binary(int op, dual a, dual b) noexcept nogil:
    """op(a, b) for a BinaryOp, both operands dual."""
    cdef double da, db
    cdef double v = binary_rule(op, a.v, b.v, &da, &db)
    return _combined(v, da, a, db, b)


cdef inline dual binary_dc(int op, dual a, double c) noexcept nogil:
    """op(a, c) for a BinaryOp and a constant c."""
    cdef double da, db
    cdef double v
    if op == BinaryOp.POWER:
        # the same rule without d/dc, which would take a log nobody reads
        op = BinaryOp.POWER_CONST_EXPONENT
    v = binary_rule(op, a.v, c, &da, &db)
    return _scaled(v, da, a)


cdef inline dual binary_cd(int op, double c, dual b) noexcept nogil:
    """op(c, b) for a BinaryOp and a constant c."""
    cdef double da, db
    cdef double v
    if op == BinaryOp.POWER:
        op = BinaryOp.POWER_CONST_BASE
    v = binary_rule(op, c, b.v, &da, &db)
    return _scaled(v, db, b)


# -- shorthands ------------------------------------------------------------------------

cdef inline dual neg(dual a) noexcept nogil:
    return unary(UnaryOp.NEGATIVE, a)

cdef inline dual square(dual a) noexcept nogil:
    return unary(UnaryOp.SQUARE, a)

cdef inline dual sqrt(dual a) noexcept nogil:
    return unary(UnaryOp.SQRT, a)

cdef inline dual exp(dual a) noexcept nogil:
    return unary(UnaryOp.EXP, a)

cdef inline dual log(dual a) noexcept nogil:
    return unary(UnaryOp.LOG, a)

cdef inline dual sin(dual a) noexcept nogil:
    return unary(UnaryOp.SIN, a)

cdef inline dual cos(dual a) noexcept nogil:
    return unary(UnaryOp.COS, a)

cdef inline dual tanh(dual a) noexcept nogil:
    return unary(UnaryOp.TANH, a)


cdef inline dual add(dual a, dual b) noexcept nogil:
    return binary(BinaryOp.ADD, a, b)

cdef inline dual sub(dual a, dual b) noexcept nogil:
    return binary(BinaryOp.SUBTRACT, a, b)

cdef inline dual mul(dual a, dual b) noexcept nogil:
    return binary(BinaryOp.MULTIPLY, a, b)

cdef inline dual div(dual a, dual b) noexcept nogil:
    return binary(BinaryOp.DIVIDE, a, b)


# a constant on the right: a + c, a - c, a * c, a / c, a ** c
cdef inline dual add_c(dual a, double c) noexcept nogil:
    return binary_dc(BinaryOp.ADD, a, c)

cdef inline dual sub_c(dual a, double c) noexcept nogil:
    return binary_dc(BinaryOp.SUBTRACT, a, c)

cdef inline dual mul_c(dual a, double c) noexcept nogil:
    return binary_dc(BinaryOp.MULTIPLY, a, c)

cdef inline dual div_c(dual a, double c) noexcept nogil:
    return binary_dc(BinaryOp.DIVIDE, a, c)

cdef inline dual pow_c(dual a, double c) noexcept nogil:
    return binary_dc(BinaryOp.POWER_CONST_EXPONENT, a, c)


# a constant on the left: c - b, c / b
cdef inline dual c_sub(double c, dual b) noexcept nogil:
    return binary_cd(BinaryOp.SUBTRACT, c, b)

cdef inline dual c_div(double c, dual b) noexcept nogil:
    return binary_cd(BinaryOp.DIVIDE, c, b)

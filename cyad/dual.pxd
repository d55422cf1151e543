# Dual numbers for C-level code: write a function once on dual elements, get its first
# and second derivatives with a compile-time lane count.
#
# First order: an element is a struct {v; p[N]}: a value and N partials (derivative
# lanes), N in 1, 2, 4, 8, 16, in double (dual1 ... dual16) or float (dual1f ... dual16f).
# Second order: an element is a nested dual struct {v; a; b[N]; c[N]} over one outer
# direction and N inner directions: the value v, its partial a along the outer
# direction, and for inner direction j the partial b[j] and the second derivative c[j]
# along inner direction j and the outer direction; in double (hdual1 ... hdual16) or
# float (hdual1f ... hdual16f). (An hdual16 is 272 bytes: compilers copy it with string
# moves: two blocks of hdual8 ran Rosenbrock at inner 16 5x faster than one hdual16.)
#
# Fused types: `dual` covers the ten first-order elements, `second_order_dual` the ten
# second-order ones, and `any_dual` all twenty. Every function below takes any_dual, so
# a generic `cdef` function over `any_dual` serves both orders, every lane count and
# dtype; one over `dual` serves first order (and may read a.p). A generic function
# branches on the order with `if any_dual in second_order_dual:`, decided at compile
# time per specialisation (the branch not taken is not compiled). Inside a
# specialisation n_lanes(a) (N) is a constant, and the C compiler unrolls the lane loops.
#
# Cython type-checks every specialisation of a fused function, used or not, so a
# function over `any_dual` may only touch what both orders have (a.v and the functions
# below), or read one order's fields under such a branch. Only the specialisations a
# module calls end up in its C code.
#
# Stable: the type and function names below, the struct layouts {v; p[N]} and
# {v; a; b[N]; c[N]} (read a.v for the value, e.g. to branch), and the op codes
# UnaryOp.X and BinaryOp.X of the rule table (cimported here, so
# `from cyad.dual cimport *` brings them and `real`). The shorthands sqrt, exp, log, ...
# shadow libc.math's names; a module that needs both can `cimport cyad.dual as ad` and
# write ad.sqrt.
#
# Derivatives come only from the rule table (cyad._rules.rules), first and second columns,
# with its conventions; in particular a lane whose tangent is 0 gets 0 even where the
# derivative coefficient is infinite or NaN (sqrt at 0), never 0 * inf = nan (for a
# second derivative, the tangent is the product b[j] * a). Values and coefficients are
# computed in double; float elements round the results to float. Propagation through
# y = g(x):  y.p = g' x.p  (first order);  y.a = g' x.a, y.b[j] = g' x.b[j],
# y.c[j] = g' x.c[j] + g'' x.b[j] x.a  (second order); binary rules likewise with the
# second partials daa, dab, dbb.
#
# Buffers follow the signatures of cyad._wrapper (outputs never share memory with
# inputs there, so a body may store element i before it loads element j). load and
# store move element i between a buffer and an element:
#     load(&a, x, dx, i, width, lane0)      store(a, y, dy, i, width, lane0)
# First order: `width` is the call's width; element i has the value x[i] and the
# partials dx[i * width : (i + 1) * width], and the element holds lanes
# [lane0, lane0 + N). Second order: `width` is the call's `inner` (cyad calls C
# functions with outer == 1); element i has the value x[i] and a row of
# second_order_row(inner) lanes at dx + i * second_order_row(inner), laid out as
#     lane 0: a     lane 1 + j: b[j]     lane 1 + inner + j: c[j]     then zero padding
# (cyad/_dual/layout.pxd's second-order layout with one outer direction)
# and the element holds inner directions [lane0, lane0 + N) (its a is lane 0 whatever
# lane0). So a generic body taking (width, lane0) serves both orders: the first-order
# function passes its width, the second-order function its inner.
#
# Derivative propagation is linear in the tangents, so a width above 16 (a multiple of
# 8) is exactly processed by running the function once per block of 8 lanes; so is an
# inner above 16, since each inner direction's (b[j], c[j]) depends only on the values,
# the outer partials and its own seeds. The values (and a) are recomputed, and stored
# again, for every block.
#
# Example: Robertson's kinetics, generic in the element type (`tag` only selects the
# specialisation) and dispatched on the lane count in functions of cyad's first- and
# second-order signatures.
#
#     from cyad.dual cimport *
#
#     cdef int robertson_lanes(any_dual* tag, const real* x, const real* dx, real* y, real* dy,
#                              Py_ssize_t width, Py_ssize_t lane0) noexcept nogil:
#         cdef any_dual u0, u1, u2, a, b, c
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
#     cdef int robertson_second(const double* x, const double* dx, double* y, double* dy,
#                               Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer,
#                               Py_ssize_t inner, void* context) noexcept nogil:
#         cdef Py_ssize_t lane0
#         cdef int status = 0
#         if outer != 1:
#             return 1   # not a layout these elements read
#         if inner == 1:
#             return robertson_lanes(<hdual1*>NULL, x, dx, y, dy, inner, 0)
#         if inner == 2:
#             return robertson_lanes(<hdual2*>NULL, x, dx, y, dy, inner, 0)
#         if inner == 4:
#             return robertson_lanes(<hdual4*>NULL, x, dx, y, dy, inner, 0)
#         if inner == 8:
#             return robertson_lanes(<hdual8*>NULL, x, dx, y, dy, inner, 0)
#         if inner == 16:
#             return robertson_lanes(<hdual16*>NULL, x, dx, y, dy, inner, 0)
#         for lane0 in range(0, inner, 8):
#             status = robertson_lanes(<hdual8*>NULL, x, dx, y, dy, inner, lane0)
#             if status:
#                 break
#         return status
#
# The float32 twins are the same dispatches with dual1f ... dual16f, hdual1f ...
# hdual16f and float buffers. cyad.wrap(robertson, NULL, NULL, (3,), None,
# robertson_second) makes a FunctionWrapper carrying both orders.

# cython: cdivision=True
# (As in cyad._rules.rules: plain C division whatever the cimporting module's directives.)

from libc.math cimport isfinite
from cyad._fused cimport real
from cyad._dual.layout cimport second_order_width, outer_lane, inner_lane, cross_lane
from cyad._rules.rules cimport (
    UnaryOp, BinaryOp, unary_rule, binary_rule, unary_second, binary_second, careful_product,
)


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

cdef struct hdual1:
    double v
    double a
    double b[1]
    double c[1]
cdef struct hdual2:
    double v
    double a
    double b[2]
    double c[2]
cdef struct hdual4:
    double v
    double a
    double b[4]
    double c[4]
cdef struct hdual8:
    double v
    double a
    double b[8]
    double c[8]
cdef struct hdual16:
    double v
    double a
    double b[16]
    double c[16]

cdef struct hdual1f:
    float v
    float a
    float b[1]
    float c[1]
cdef struct hdual2f:
    float v
    float a
    float b[2]
    float c[2]
cdef struct hdual4f:
    float v
    float a
    float b[4]
    float c[4]
cdef struct hdual8f:
    float v
    float a
    float b[8]
    float c[8]
cdef struct hdual16f:
    float v
    float a
    float b[16]
    float c[16]

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

ctypedef fused second_order_dual:
    hdual1
    hdual2
    hdual4
    hdual8
    hdual16
    hdual1f
    hdual2f
    hdual4f
    hdual8f
    hdual16f

ctypedef fused any_dual:
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
    hdual1
    hdual2
    hdual4
    hdual8
    hdual16
    hdual1f
    hdual2f
    hdual4f
    hdual8f
    hdual16f


cdef inline Py_ssize_t n_lanes(any_dual a) noexcept nogil:
    """The number of partials of a, or of inner directions (a compile-time constant)."""
    if any_dual in second_order_dual:
        return sizeof(a.b) // sizeof(a.b[0])
    else:
        return sizeof(a.p) // sizeof(a.p[0])


cdef inline Py_ssize_t second_order_row(Py_ssize_t inner) noexcept nogil:
    """The lanes of a second-order row for outer == 1 and `inner` inner directions:
    1 + 2 inner lanes padded to 1, 2, 4, 8, 16 or a multiple of 8."""
    return second_order_width(1, inner)


# -- buffers and constants -------------------------------------------------------------

cdef inline void load(any_dual* a, const real* x, const real* dx, Py_ssize_t i,
                      Py_ssize_t width, Py_ssize_t lane0) noexcept nogil:
    """a = element i of (x, dx), lanes (or inner directions) [lane0, lane0 + N).

    `width` is the call's width (first order) or its inner (second order).
    """
    cdef Py_ssize_t k
    cdef const real* row
    a.v = x[i]
    if any_dual in second_order_dual:
        row = dx + i * second_order_row(width)
        a.a = row[outer_lane(0)]
        for k in range(n_lanes(a[0])):
            a.b[k] = row[inner_lane(1, lane0 + k)]
            a.c[k] = row[cross_lane(1, width, lane0 + k, 0)]
    else:
        for k in range(n_lanes(a[0])):
            a.p[k] = dx[i * width + lane0 + k]


cdef inline void store(any_dual a, real* y, real* dy, Py_ssize_t i,
                       Py_ssize_t width, Py_ssize_t lane0) noexcept nogil:
    """Element i of (y, dy), lanes (or inner directions) [lane0, lane0 + N), = a.

    `width` is the call's width (first order) or its inner (second order).
    """
    cdef Py_ssize_t k
    cdef real* row
    y[i] = a.v
    if any_dual in second_order_dual:
        row = dy + i * second_order_row(width)
        row[outer_lane(0)] = a.a
        for k in range(n_lanes(a)):
            row[inner_lane(1, lane0 + k)] = a.b[k]
            row[cross_lane(1, width, lane0 + k, 0)] = a.c[k]
    else:
        for k in range(n_lanes(a)):
            dy[i * width + lane0 + k] = a.p[k]


cdef inline void constant(any_dual* a, double c) noexcept nogil:
    """a = c with zero partials."""
    cdef Py_ssize_t k
    a.v = c
    if any_dual in second_order_dual:
        a.a = 0
        for k in range(n_lanes(a[0])):
            a.b[k] = 0
            a.c[k] = 0
    else:
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


cdef inline dual _combined(double v, double da, dual a,
                           double db, dual b) noexcept nogil:
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


cdef inline second_order_dual _scaled2(double v, double d, double dd,
                                       second_order_dual x) noexcept nogil:
    # y = g(x) for g(x.v) = v, g' = d, g'' = dd:
    # y.a = d x.a, y.b = d x.b, y.c = d x.c + dd x.b x.a
    cdef second_order_dual r
    cdef Py_ssize_t k
    cdef double xa = x.a
    r.v = v
    if isfinite(d) and isfinite(dd):
        r.a = d * xa
        for k in range(n_lanes(x)):
            r.b[k] = d * x.b[k]
            r.c[k] = d * x.c[k] + dd * (x.b[k] * xa)
    else:
        r.a = careful_product(d, xa)
        for k in range(n_lanes(x)):
            r.b[k] = careful_product(d, x.b[k])
            r.c[k] = careful_product(d, x.c[k]) + careful_product(dd, x.b[k] * xa)
    return r


cdef inline second_order_dual _combined2(double v, double da, double db, double daa,
                                         double dab, double dbb, second_order_dual x,
                                         second_order_dual y) noexcept nogil:
    # z = f(x, y) for f = v, first partials da, db and second partials daa, dab, dbb:
    # z.a = da x.a + db y.a (z.b likewise),
    # z.c = da x.c + db y.c + daa x.b x.a + dab (x.b y.a + y.b x.a) + dbb y.b y.a
    cdef second_order_dual r
    cdef Py_ssize_t k
    cdef double xa = x.a, ya = y.a
    r.v = v
    if (isfinite(da) and isfinite(db) and isfinite(daa) and isfinite(dab)
            and isfinite(dbb)):
        r.a = da * xa + db * ya
        for k in range(n_lanes(x)):
            r.b[k] = da * x.b[k] + db * y.b[k]
            r.c[k] = (da * x.c[k] + db * y.c[k] + daa * (x.b[k] * xa)
                      + dab * (x.b[k] * ya + y.b[k] * xa) + dbb * (y.b[k] * ya))
    else:
        r.a = careful_product(da, xa) + careful_product(db, ya)
        for k in range(n_lanes(x)):
            r.b[k] = careful_product(da, x.b[k]) + careful_product(db, y.b[k])
            r.c[k] = (careful_product(da, x.c[k]) + careful_product(db, y.c[k])
                      + careful_product(daa, x.b[k] * xa)
                      + careful_product(dab, x.b[k] * ya) + careful_product(dab, y.b[k] * xa)
                      + careful_product(dbb, y.b[k] * ya))
    return r


cdef inline any_dual unary(int op, any_dual a) noexcept nogil:
    """op(a) for a UnaryOp."""
    cdef double d
    cdef double v = unary_rule(op, a.v, &d)
    if any_dual in second_order_dual:
        return _scaled2(v, d, unary_second(op, a.v, v, d), a)
    else:
        return _scaled(v, d, a)


cdef inline any_dual binary(int op, any_dual a, any_dual b) noexcept nogil:
    """op(a, b) for a BinaryOp, both operands any_dual."""
    cdef double da, db, daa, dab, dbb
    cdef double v = binary_rule(op, a.v, b.v, &da, &db)
    if any_dual in second_order_dual:
        binary_second(op, a.v, b.v, v, da, db, &daa, &dab, &dbb)
        return _combined2(v, da, db, daa, dab, dbb, a, b)
    else:
        return _combined(v, da, a, db, b)


cdef inline any_dual binary_dc(int op, any_dual a, double c) noexcept nogil:
    """op(a, c) for a BinaryOp and a constant c."""
    cdef double da, db, daa, dab, dbb
    cdef double v
    if op == BinaryOp.POWER:
        # the same rule without d/dc, which would take a log nobody reads
        op = BinaryOp.POWER_CONST_EXPONENT
    v = binary_rule(op, a.v, c, &da, &db)
    if any_dual in second_order_dual:
        binary_second(op, a.v, c, v, da, db, &daa, &dab, &dbb)
        return _scaled2(v, da, daa, a)
    else:
        return _scaled(v, da, a)


cdef inline any_dual binary_cd(int op, double c, any_dual b) noexcept nogil:
    """op(c, b) for a BinaryOp and a constant c."""
    cdef double da, db, daa, dab, dbb
    cdef double v
    if op == BinaryOp.POWER:
        op = BinaryOp.POWER_CONST_BASE
    v = binary_rule(op, c, b.v, &da, &db)
    if any_dual in second_order_dual:
        binary_second(op, c, b.v, v, da, db, &daa, &dab, &dbb)
        return _scaled2(v, db, dbb, b)
    else:
        return _scaled(v, db, b)


# -- shorthands ------------------------------------------------------------------------

cdef inline any_dual neg(any_dual a) noexcept nogil:
    return unary(UnaryOp.NEGATIVE, a)

cdef inline any_dual square(any_dual a) noexcept nogil:
    return unary(UnaryOp.SQUARE, a)

cdef inline any_dual sqrt(any_dual a) noexcept nogil:
    return unary(UnaryOp.SQRT, a)

cdef inline any_dual exp(any_dual a) noexcept nogil:
    return unary(UnaryOp.EXP, a)

cdef inline any_dual log(any_dual a) noexcept nogil:
    return unary(UnaryOp.LOG, a)

cdef inline any_dual sin(any_dual a) noexcept nogil:
    return unary(UnaryOp.SIN, a)

cdef inline any_dual cos(any_dual a) noexcept nogil:
    return unary(UnaryOp.COS, a)

cdef inline any_dual tanh(any_dual a) noexcept nogil:
    return unary(UnaryOp.TANH, a)


cdef inline any_dual add(any_dual a, any_dual b) noexcept nogil:
    return binary(BinaryOp.ADD, a, b)

cdef inline any_dual sub(any_dual a, any_dual b) noexcept nogil:
    return binary(BinaryOp.SUBTRACT, a, b)

cdef inline any_dual mul(any_dual a, any_dual b) noexcept nogil:
    return binary(BinaryOp.MULTIPLY, a, b)

cdef inline any_dual div(any_dual a, any_dual b) noexcept nogil:
    return binary(BinaryOp.DIVIDE, a, b)


# a constant on the right: a + c, a - c, a * c, a / c, a ** c
cdef inline any_dual add_c(any_dual a, double c) noexcept nogil:
    return binary_dc(BinaryOp.ADD, a, c)

cdef inline any_dual sub_c(any_dual a, double c) noexcept nogil:
    return binary_dc(BinaryOp.SUBTRACT, a, c)

cdef inline any_dual mul_c(any_dual a, double c) noexcept nogil:
    return binary_dc(BinaryOp.MULTIPLY, a, c)

cdef inline any_dual div_c(any_dual a, double c) noexcept nogil:
    return binary_dc(BinaryOp.DIVIDE, a, c)

cdef inline any_dual pow_c(any_dual a, double c) noexcept nogil:
    return binary_dc(BinaryOp.POWER_CONST_EXPONENT, a, c)


# a constant on the left: c - b, c / b
cdef inline any_dual c_sub(double c, any_dual b) noexcept nogil:
    return binary_cd(BinaryOp.SUBTRACT, c, b)

cdef inline any_dual c_div(double c, any_dual b) noexcept nogil:
    return binary_cd(BinaryOp.DIVIDE, c, b)

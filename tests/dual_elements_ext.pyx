# Built by test_dual_elements.py against the installed cyad: functions of cyad's
# signature written once on the dual elements of cyad.dual, and def hooks to call them.
import numpy as np

from cyad._wrapper cimport cyad_f64, cyad_f32
from cyad.dual cimport *


# -- Rosenbrock: y0 = sum over i of 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2 ------------

cdef int rosenbrock_lanes(dual* tag, const real* x, const real* dx, real* y, real* dy,
                          Py_ssize_t n, Py_ssize_t width, Py_ssize_t lane0) noexcept nogil:
    cdef dual xi, xn, f
    cdef Py_ssize_t i
    constant(&f, 0.0)
    load(&xi, x, dx, 0, width, lane0)
    for i in range(1, n):
        load(&xn, x, dx, i, width, lane0)
        f = add(f, add(mul_c(square(sub(xn, square(xi))), 100.0), square(c_sub(1.0, xi))))
        xi = xn
    store(f, y, dy, 0, width, lane0)
    return 0


cdef int rosenbrock(const double* x, const double* dx, double* y, double* dy,
                    Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                    void* context) noexcept nogil:
    cdef Py_ssize_t lane0
    cdef int status = 0
    if width == 1:
        return rosenbrock_lanes(<dual1*>NULL, x, dx, y, dy, n_x, width, 0)
    if width == 2:
        return rosenbrock_lanes(<dual2*>NULL, x, dx, y, dy, n_x, width, 0)
    if width == 4:
        return rosenbrock_lanes(<dual4*>NULL, x, dx, y, dy, n_x, width, 0)
    if width == 8:
        return rosenbrock_lanes(<dual8*>NULL, x, dx, y, dy, n_x, width, 0)
    if width == 16:
        return rosenbrock_lanes(<dual16*>NULL, x, dx, y, dy, n_x, width, 0)
    for lane0 in range(0, width, 8):
        status = rosenbrock_lanes(<dual8*>NULL, x, dx, y, dy, n_x, width, lane0)
        if status:
            break
    return status


# -- Robertson's kinetics, in float64 and float32 -----------------------------------------

cdef int robertson_lanes(dual* tag, const real* x, const real* dx, real* y, real* dy,
                         Py_ssize_t width, Py_ssize_t lane0) noexcept nogil:
    cdef dual u0, u1, u2, a, b, c
    load(&u0, x, dx, 0, width, lane0)
    load(&u1, x, dx, 1, width, lane0)
    load(&u2, x, dx, 2, width, lane0)
    a = mul_c(u0, 0.04)
    b = mul_c(mul(u1, u2), 1e4)
    c = mul_c(square(u1), 3e7)
    store(sub(b, a), y, dy, 0, width, lane0)
    store(sub(sub(a, b), c), y, dy, 1, width, lane0)
    store(c, y, dy, 2, width, lane0)
    return 0


cdef int robertson(const double* x, const double* dx, double* y, double* dy,
                   Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                   void* context) noexcept nogil:
    cdef Py_ssize_t lane0
    cdef int status = 0
    if width == 1:
        return robertson_lanes(<dual1*>NULL, x, dx, y, dy, width, 0)
    if width == 2:
        return robertson_lanes(<dual2*>NULL, x, dx, y, dy, width, 0)
    if width == 4:
        return robertson_lanes(<dual4*>NULL, x, dx, y, dy, width, 0)
    if width == 8:
        return robertson_lanes(<dual8*>NULL, x, dx, y, dy, width, 0)
    if width == 16:
        return robertson_lanes(<dual16*>NULL, x, dx, y, dy, width, 0)
    for lane0 in range(0, width, 8):
        status = robertson_lanes(<dual8*>NULL, x, dx, y, dy, width, lane0)
        if status:
            break
    return status


cdef int robertson_f32(const float* x, const float* dx, float* y, float* dy,
                       Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                       void* context) noexcept nogil:
    cdef Py_ssize_t lane0
    cdef int status = 0
    if width == 1:
        return robertson_lanes(<dual1f*>NULL, x, dx, y, dy, width, 0)
    if width == 2:
        return robertson_lanes(<dual2f*>NULL, x, dx, y, dy, width, 0)
    if width == 4:
        return robertson_lanes(<dual4f*>NULL, x, dx, y, dy, width, 0)
    if width == 8:
        return robertson_lanes(<dual8f*>NULL, x, dx, y, dy, width, 0)
    if width == 16:
        return robertson_lanes(<dual16f*>NULL, x, dx, y, dy, width, 0)
    for lane0 in range(0, width, 8):
        status = robertson_lanes(<dual8f*>NULL, x, dx, y, dy, width, lane0)
        if status:
            break
    return status


# -- hooks ------------------------------------------------------------------------------

cdef size_t data(a):
    # the address of the first element of a contiguous NumPy array
    return a.ctypes.data


def evaluate(str name, x, dx, Py_ssize_t n_y):
    """(y, dy) of a function above at x (n_x values) and dx (n_x x width); float32 x
    runs robertson_f32."""
    cdef cyad_f64 f64 = rosenbrock if name == "rosenbrock" else robertson
    cdef cyad_f32 f32 = robertson_f32
    x = np.ascontiguousarray(x)
    dx = np.ascontiguousarray(dx, x.dtype)
    y, dy = np.zeros(n_y, x.dtype), np.zeros((n_y, dx.shape[1]), x.dtype)
    if x.dtype == np.float32:
        status = f32(<float*>data(x), <float*>data(dx), <float*>data(y), <float*>data(dy),
                     x.shape[0], n_y, dx.shape[1], NULL)
    else:
        status = f64(<double*>data(x), <double*>data(dx), <double*>data(y), <double*>data(dy),
                     x.shape[0], n_y, dx.shape[1], NULL)
    assert status == 0
    return y, dy


# Every op of the rule table, by its enumerator's name in lower case.
UNARY_OPS = dict(
    negative=UnaryOp.NEGATIVE, positive=UnaryOp.POSITIVE, absolute=UnaryOp.ABSOLUTE,
    sqrt=UnaryOp.SQRT, cbrt=UnaryOp.CBRT, square=UnaryOp.SQUARE, reciprocal=UnaryOp.RECIPROCAL,
    exp=UnaryOp.EXP, exp2=UnaryOp.EXP2, expm1=UnaryOp.EXPM1, log=UnaryOp.LOG,
    log2=UnaryOp.LOG2, log10=UnaryOp.LOG10, log1p=UnaryOp.LOG1P,
    sin=UnaryOp.SIN, cos=UnaryOp.COS, tan=UnaryOp.TAN,
    arcsin=UnaryOp.ARCSIN, arccos=UnaryOp.ARCCOS, arctan=UnaryOp.ARCTAN,
    sinh=UnaryOp.SINH, cosh=UnaryOp.COSH, tanh=UnaryOp.TANH,
    arcsinh=UnaryOp.ARCSINH, arccosh=UnaryOp.ARCCOSH, arctanh=UnaryOp.ARCTANH,
    deg2rad=UnaryOp.DEG2RAD, rad2deg=UnaryOp.RAD2DEG, sign=UnaryOp.SIGN,
    floor=UnaryOp.FLOOR, ceil=UnaryOp.CEIL, rint=UnaryOp.RINT, trunc=UnaryOp.TRUNC,
)
BINARY_OPS = dict(
    add=BinaryOp.ADD, subtract=BinaryOp.SUBTRACT, multiply=BinaryOp.MULTIPLY,
    divide=BinaryOp.DIVIDE, power=BinaryOp.POWER,
    power_const_exponent=BinaryOp.POWER_CONST_EXPONENT,
    power_const_base=BinaryOp.POWER_CONST_BASE,
    arctan2=BinaryOp.ARCTAN2, hypot=BinaryOp.HYPOT, maximum=BinaryOp.MAXIMUM,
    minimum=BinaryOp.MINIMUM, fmax=BinaryOp.FMAX, fmin=BinaryOp.FMIN,
    logaddexp=BinaryOp.LOGADDEXP, logaddexp2=BinaryOp.LOGADDEXP2,
)


cdef dual4 element(double v, tangent):
    cdef dual4 a
    cdef Py_ssize_t k
    a.v = v
    for k in range(4):
        a.p[k] = tangent[k]
    return a


cdef tuple result(dual4 r):
    return r.v, [r.p[k] for k in range(4)]


def unary_op(int op, double a, ta):
    """op(a) on a dual4 with partials ta: (value, partials)."""
    return result(unary(op, element(a, ta)))


def binary_op(int op, str operands, double a, double b, ta, tb):
    """op(a, b) on dual4 elements; operands "dd", "dc" (b constant) or "cd" (a constant)."""
    if operands == "dd":
        return result(binary(op, element(a, ta), element(b, tb)))
    if operands == "dc":
        return result(binary_dc(op, element(a, ta), b))
    return result(binary_cd(op, a, element(b, tb)))


def shorthands(double a, double b, ta, tb):
    """Every shorthand of cyad.dual on the dual4 elements (a, ta) and (b, tb)."""
    cdef dual4 x = element(a, ta), y = element(b, tb)
    return dict(
        neg=result(neg(x)), square=result(square(x)), sqrt=result(sqrt(x)),
        exp=result(exp(x)), log=result(log(x)), sin=result(sin(x)), cos=result(cos(x)),
        tanh=result(tanh(x)),
        add=result(add(x, y)), sub=result(sub(x, y)), mul=result(mul(x, y)),
        div=result(div(x, y)),
        add_c=result(add_c(x, b)), sub_c=result(sub_c(x, b)), mul_c=result(mul_c(x, b)),
        div_c=result(div_c(x, b)), pow_c=result(pow_c(x, b)),
        c_sub=result(c_sub(a, y)), c_div=result(c_div(a, y)),
    )


def lane_counts():
    """n_lanes of every element type, double then float."""
    cdef dual1 d1
    cdef dual2 d2
    cdef dual4 d4
    cdef dual8 d8
    cdef dual16 d16
    cdef dual1f f1
    cdef dual2f f2
    cdef dual4f f4
    cdef dual8f f8
    cdef dual16f f16
    return [n_lanes(d1), n_lanes(d2), n_lanes(d4), n_lanes(d8), n_lanes(d16),
            n_lanes(f1), n_lanes(f2), n_lanes(f4), n_lanes(f8), n_lanes(f16)]

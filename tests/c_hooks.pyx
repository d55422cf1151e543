# Built once per test session against the installed cyad (conftest.py): hooks that run
# cyad's dual elements and its nogil entry points from C.
import numpy as np

from cyad._rules.table import BINARY_RULES, UNARY_RULES

cimport cyad
from cyad.dual cimport *
from cyad._fused cimport real
from cyad._rules.rules cimport unary_rule, binary_rule, unary_second, binary_second


# -- nogil entry points ----------------------------------------------------------------------

cdef extern from *:
    """
    static int cyad_test_arrive(int *count) {
        return __atomic_add_fetch(count, 1, __ATOMIC_SEQ_CST);
    }
    static int cyad_test_count(int *count) { return __atomic_load_n(count, __ATOMIC_SEQ_CST); }
    """
    int cyad_test_arrive(int* count) nogil
    int cyad_test_count(int* count) nogil


cdef int copy_when(int* arrival, int* waited, int target, const double* x, const double* dx,
                   double* y, double* dy, Py_ssize_t n_x, Py_ssize_t width) noexcept nogil:
    # y = x once `waited` reaches `target`: counts itself in `arrival` first, then waits
    # (a bounded spin); status 1 if it never does
    cdef long _spin
    cdef Py_ssize_t i
    cyad_test_arrive(arrival)
    for _spin in range(4_000_000_000):
        if cyad_test_count(waited) >= target:
            break
    else:
        return 1
    for i in range(n_x):
        y[i] = x[i]
    for i in range(n_x * width):
        dy[i] = dx[i]
    return 0


cdef int together(const double* x, const double* dx, double* y, double* dy,
                  Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
                  void* context) noexcept nogil:
    """y = x, once `context` (an int counter) shows two calls inside at the same time.

    Each call counts itself in and waits (a bounded spin) for the other thread's
    call: it can only arrive while this one still runs if neither holds the GIL.
    Status 1 if the other never came.
    """
    return copy_when(<int*>context, <int*>context, 2, x, dx, y, dy, n_x, width)


def together_function(size_t counter):
    """`together` as a FunctionWrapper, with the address of a C int as its counter."""
    return cyad.wrap(together, NULL, <void*>counter)


cdef int held(const double* x, const double* dx, double* y, double* dy,
              Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t width,
              void* context) noexcept nogil:
    """y = x, once `context` (two C ints) lets it: it counts itself in the first and
    waits (a bounded spin) until the second is set. Status 1 if it never is."""
    cdef int* flags = <int*>context
    return copy_when(&flags[0], &flags[1], 1, x, dx, y, dy, n_x, width)


def held_function(size_t flags):
    """`held` as a FunctionWrapper, with the address of two C ints as its flags."""
    return cyad.wrap(held, NULL, <void*>flags)


def jacobian_without_gil(prep, double[::1] x, double[::1] y, double[:, ::1] jacobian):
    """cyad.jacobian_nogil of a prepared two-argument function; returns its status."""
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    cdef int status
    with nogil:
        status = cyad.jacobian_nogil(handle, &x[0], &y[0], <double*>NULL, &jacobian[0, 0])
    return status


def pushforward_without_gil(prep, double[::1] x, double[::1] dx, double[::1] out):
    """cyad.pushforward_nogil of a prepared one-argument function; returns its status."""
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    cdef int status
    with nogil:
        status = cyad.pushforward_nogil(handle, &x[0], &dx[0], <double*>NULL, &out[0])
    return status


def gradient_without_gil(prep, double[::1] x, double[::1] value, double[::1] gradient):
    """cyad.gradient_nogil of a prepared one-argument function, f's value into value[0];
    returns its status."""
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    cdef int status
    with nogil:
        status = cyad.gradient_nogil(handle, &x[0], <double*>NULL, &value[0], &gradient[0])
    return status


def hvp_without_gil(prep, double[::1] x, double[::1] v, double[::1] out):
    """cyad.hvp_nogil of a prepared one-argument function; returns its status."""
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    cdef int status
    with nogil:
        status = cyad.hvp_nogil(handle, &x[0], &v[0], <double*>NULL, <double*>NULL, &out[0])
    return status


def hessian_without_gil(prep, double[::1] x, double[::1] gradient, double[:, ::1] hessian):
    """cyad.hessian_nogil of a prepared one-argument function; returns its status."""
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    cdef int status
    with nogil:
        status = cyad.hessian_nogil(handle, &x[0], <double*>NULL, <double*>NULL, &gradient[0],
                                    &hessian[0, 0])
    return status


ENTRY_POINTS = ["pushforward", "value_and_pushforward", "gradient", "jacobian", "hvp", "hessian",
                "pullback", "value_and_pullback"]


cdef int call_entry_point(int entry, cyad.cyad_prep* handle, real* dtype,
                          const size_t* a) noexcept nogil:
    # entry point number `entry` (ENTRY_POINTS) in real's dtype on the addresses a
    if entry == 0:
        return cyad.pushforward_nogil(handle, <const real*>a[0], <const real*>a[1], <real*>a[2],
                                      <real*>a[3])
    if entry == 1:
        return cyad.value_and_pushforward_nogil(handle, <const real*>a[0], <const real*>a[1],
                                                <real*>a[2], <real*>a[3], <real*>a[4])
    if entry == 2:
        return cyad.gradient_nogil(handle, <const real*>a[0], <real*>a[1], <real*>a[2],
                                   <real*>a[3])
    if entry == 3:
        return cyad.jacobian_nogil(handle, <const real*>a[0], <real*>a[1], <real*>a[2],
                                   <real*>a[3])
    if entry == 4:
        return cyad.hvp_nogil(handle, <const real*>a[0], <const real*>a[1], <real*>a[2],
                              <real*>a[3], <real*>a[4])
    if entry == 5:
        return cyad.hessian_nogil(handle, <const real*>a[0], <real*>a[1], <real*>a[2],
                                  <real*>a[3], <real*>a[4])
    if entry == 6:
        return cyad.pullback_nogil(handle, <const real*>a[0], <const real*>a[1], <real*>a[2],
                                   <real*>a[3])
    return cyad.value_and_pullback_nogil(handle, <const real*>a[0], <const real*>a[1],
                                         <real*>a[2], <real*>a[3], <real*>a[4])


def entry_point_without_gil(str entry, prep, dtype, *arrays):
    """cyad.<entry>_nogil in `dtype` (float64 or float32) on the data of the arrays, in the
    entry point's order of arguments after the handle (None: NULL); returns its status."""
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    cdef size_t a[5]
    cdef int which = ENTRY_POINTS.index(entry), status
    cdef bint float32 = np.dtype(dtype) == np.float32
    for i, array in enumerate(arrays):
        a[i] = 0 if array is None else array.__array_interface__["data"][0]
    with nogil:
        if float32:
            status = call_entry_point(which, handle, <float*>NULL, a)
        else:
            status = call_entry_point(which, handle, <double*>NULL, a)
    return status


def gradient_without_gil_float32(prep, float[::1] x):
    """cyad.gradient_nogil in float32 (a float64 prep answers WRONG_CALL)."""
    cdef cyad.cyad_prep* handle = cyad.prep_handle(prep)
    cdef float[::1] gradient = np.zeros(x.shape[0], np.float32)
    with nogil:
        status = cyad.gradient_nogil(handle, &x[0], <float*>NULL, <float*>NULL, &gradient[0])
    return status


# -- dual elements ---------------------------------------------------------------------------


# Every op of the rule table, by its rule's name: its position in the table, as in the
# generated enums UnaryOp and BinaryOp.
UNARY_OPS = {rule.name: op for op, rule in enumerate(UNARY_RULES)}
BINARY_OPS = {rule.name: op for op, rule in enumerate(BINARY_RULES)}


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


# -- the rule table's two columns, as numbers ------------------------------------------------

def unary_derivatives(int op, double x):
    """(f'(x), f''(x)) of a unary rule."""
    cdef double d
    cdef double v = unary_rule(op, x, &d)
    return d, unary_second(op, x, v, d)


def binary_derivatives(int op, double a, double b):
    """((df/da, df/db), (d2f/da2, d2f/dadb, d2f/db2)) of a binary rule."""
    cdef double da, db, daa, dab, dbb
    cdef double v = binary_rule(op, a, b, &da, &db)
    binary_second(op, a, b, v, da, db, &daa, &dab, &dbb)
    return (da, db), (daa, dab, dbb)


# -- second order: calling a wrapper's second-order function, and the hdual elements ------------

from cyad._dual.layout cimport (lane_count, second_order_width, outer_lane, inner_lane,
                                cross_lane)
from cyad._wrapper cimport FunctionWrapper


def call_second(FunctionWrapper w, x, dx, y, dy, Py_ssize_t outer, Py_ssize_t inner):
    """Call w's second-order function of x's dtype on the given C-contiguous arrays.

    dx and dy are n x second_order_width(outer, inner); returns the status.
    """
    cdef double[::1] x64, y64
    cdef double[:, ::1] dx64, dy64
    cdef float[::1] x32, y32
    cdef float[:, ::1] dx32, dy32
    cdef int status
    if x.dtype == np.float64:
        x64, dx64, y64, dy64 = x, dx, y, dy
        assert w.function.second_f64 != NULL
        with nogil:
            status = w.function.second_f64(&x64[0], &dx64[0, 0], &y64[0], &dy64[0, 0],
                                           x64.shape[0], y64.shape[0], outer, inner,
                                           w.function.context)
    else:
        x32, dx32, y32, dy32 = x, dx, y, dy
        assert w.function.second_f32 != NULL
        with nogil:
            status = w.function.second_f32(&x32[0], &dx32[0, 0], &y32[0], &dy32[0, 0],
                                           x32.shape[0], y32.shape[0], outer, inner,
                                           w.function.context)
    return status


def c_layout(Py_ssize_t outer, Py_ssize_t inner):
    """The C-level layout functions (cyad/_dual/layout.pxd) for (outer, inner): lane_count(outer),
    second_order_width, and the lanes of a[k], b[j] and c[j][k]."""
    return dict(first=lane_count(outer), width=second_order_width(outer, inner),
                a=[outer_lane(k) for k in range(outer)],
                b=[inner_lane(outer, j) for j in range(inner)],
                c=[[cross_lane(outer, inner, j, k) for k in range(outer)] for j in range(inner)])


def second_order_rows(Py_ssize_t largest):
    """cyad.dual's second_order_row(inner) for inner = 1 .. largest."""
    return [second_order_row(inner) for inner in range(1, largest + 1)]


cdef int copy_second(const double* x, const double* dx, double* y, double* dy,
                     Py_ssize_t n_x, Py_ssize_t n_y, Py_ssize_t outer, Py_ssize_t inner,
                     void* context) noexcept nogil:
    """y = x at second order, through hdual2 elements in blocks of 2 (inner even)."""
    cdef hdual2 a
    cdef Py_ssize_t i, lane0
    if outer != 1 or inner % 2:
        return 1
    for lane0 in range(0, inner, 2):
        for i in range(n_x):
            load(&a, x, dx, i, inner, lane0)
            store(a, y, dy, i, inner, lane0)
    return 0


def second_only_function():
    """A FunctionWrapper made by cyad.wrap of a second-order float64 function alone."""
    return cyad.wrap(NULL, NULL, NULL, None, None, copy_second)


def wrap_nothing():
    return cyad.wrap(NULL, NULL, NULL)


def hdual_lane_counts():
    """n_lanes of every second-order element type, double then float."""
    cdef hdual1 d1
    cdef hdual2 d2
    cdef hdual4 d4
    cdef hdual8 d8
    cdef hdual16 d16
    cdef hdual1f f1
    cdef hdual2f f2
    cdef hdual4f f4
    cdef hdual8f f8
    cdef hdual16f f16
    return [n_lanes(d1), n_lanes(d2), n_lanes(d4), n_lanes(d8), n_lanes(d16),
            n_lanes(f1), n_lanes(f2), n_lanes(f4), n_lanes(f8), n_lanes(f16)]


def hdual_block(double[::1] x, double[:, ::1] dx, Py_ssize_t inner, Py_ssize_t lane0):
    """Every element of (x, dx) loaded into an hdual4 from inner directions
    [lane0, lane0 + 4) and stored into zeroed buffers: (y, dy)."""
    cdef double[::1] y = np.zeros(x.shape[0])
    cdef double[:, ::1] dy = np.zeros_like(dx)
    cdef hdual4 a
    cdef Py_ssize_t i
    for i in range(x.shape[0]):
        load(&a, &x[0], &dx[0, 0], i, inner, lane0)
        store(a, &y[0], &dy[0, 0], i, inner, lane0)
    return np.asarray(y), np.asarray(dy)


def hdual_constant(double c, bint single):
    """constant() into an hdual4 (or hdual4f): (v, a, b, c)."""
    cdef hdual4 a
    cdef hdual4f f
    if single:
        constant(&f, c)
        return hresult_f(f)
    constant(&a, c)
    return hresult(a)


cdef hdual4 helement(double v, double a, b, c):
    cdef hdual4 r
    cdef Py_ssize_t k
    r.v = v
    r.a = a
    for k in range(4):
        r.b[k] = b[k]
        r.c[k] = c[k]
    return r


cdef hdual4f helement_f(double v, double a, b, c):
    cdef hdual4f r
    cdef Py_ssize_t k
    r.v = <float>v
    r.a = <float>a
    for k in range(4):
        r.b[k] = <float>b[k]
        r.c[k] = <float>c[k]
    return r


cdef tuple hresult(hdual4 r):
    return r.v, r.a, [r.b[k] for k in range(4)], [r.c[k] for k in range(4)]


cdef tuple hresult_f(hdual4f r):
    return r.v, r.a, [r.b[k] for k in range(4)], [r.c[k] for k in range(4)]


def hdual_unary_op(int op, x):
    """op on the hdual4 x = (v, a, b, c): (v, a, b, c)."""
    return hresult(unary(op, helement(x[0], x[1], x[2], x[3])))


def hdual_binary_op(int op, str operands, x, y):
    """op(x, y) on hdual4 elements (v, a, b, c); operands "dd", "dc" (y a number) or "cd"."""
    if operands == "dd":
        return hresult(binary(op, helement(x[0], x[1], x[2], x[3]),
                              helement(y[0], y[1], y[2], y[3])))
    if operands == "dc":
        return hresult(binary_dc(op, helement(x[0], x[1], x[2], x[3]), <double>y))
    return hresult(binary_cd(op, <double>x, helement(y[0], y[1], y[2], y[3])))


cdef dict hdual_shorthands_of(second_order_dual* tag, second_order_dual x, second_order_dual y,
                              double a, double b):
    return dict(
        neg=neg(x), square=square(x), sqrt=sqrt(x), exp=exp(x), log=log(x), sin=sin(x),
        cos=cos(x), tanh=tanh(x),
        add=add(x, y), sub=sub(x, y), mul=mul(x, y), div=div(x, y),
        add_c=add_c(x, b), sub_c=sub_c(x, b), mul_c=mul_c(x, b), div_c=div_c(x, b),
        pow_c=pow_c(x, b), c_sub=c_sub(a, y), c_div=c_div(a, y),
    )


def hdual_shorthands(x, y, bint single):
    """Every shorthand on the hdual4 (or hdual4f) elements x and y (v, a, b, c); the
    constants are x's and y's values."""
    cdef double a = x[0], b = y[0]
    if single:
        results = hdual_shorthands_of(<hdual4f*>NULL, helement_f(x[0], x[1], x[2], x[3]),
                                      helement_f(y[0], y[1], y[2], y[3]), a, b)
    else:
        results = hdual_shorthands_of(<hdual4*>NULL, helement(x[0], x[1], x[2], x[3]),
                                      helement(y[0], y[1], y[2], y[3]), a, b)
    return {name: (r["v"], r["a"], list(r["b"]), list(r["c"])) for name, r in results.items()}


# Generic code that reads the fields of one order: over dual (first order), or over
# any_dual under a compile-time branch on the order.
cdef double squared_first_lane(dual* tag, const double* x,
                               const double* dx) noexcept nogil:
    cdef dual a
    load(&a, x, dx, 0, n_lanes(a), 0)
    return square(a).p[0]


cdef double squared_outer_or_first_lane(any_dual* tag, const double* x,
                                        const double* dx) noexcept nogil:
    cdef any_dual a
    load(&a, x, dx, 0, 1, 0)   # width 1, or inner 1: rows of 1 or 4 lanes
    a = square(a)
    if any_dual in second_order_dual:
        return a.a
    else:
        return a.p[0]


def order_specific_fields(double x):
    """d(x^2) along a unit tangent through both kinds of order-specific code."""
    cdef double dx[4]
    dx[:] = [1.0, 1.0, 0.0, 0.0]
    return [squared_first_lane(<dual1*>NULL, &x, dx), squared_first_lane(<dual2f*>NULL, &x, dx),
            squared_outer_or_first_lane(<dual1*>NULL, &x, dx),
            squared_outer_or_first_lane(<hdual1*>NULL, &x, dx)]


# -- a FunctionWrapper's C functions, called directly ---------------------------------------

def call_function(wrapper, real[::1] x, real[:, ::1] dx, real[::1] y, real[:, ::1] dy,
                  Py_ssize_t repeats=1):
    """Call the wrapper's first-order C function `repeats` times without the GIL (dx and dy
    n x width): the status."""
    cdef const cyad.cyad_function* function = cyad.function_of(wrapper)
    cdef int status = 0
    cdef Py_ssize_t _r
    with nogil:
        for _r in range(repeats):
            if real is double:
                status = function.f64(&x[0], &dx[0, 0], &y[0], &dy[0, 0], x.shape[0],
                                      y.shape[0], dx.shape[1], function.context)
            else:
                status = function.f32(&x[0], &dx[0, 0], &y[0], &dy[0, 0], x.shape[0],
                                      y.shape[0], dx.shape[1], function.context)
            if status:
                break
    return status


def call_second_order_function(wrapper, real[::1] x, real[:, ::1] dx, real[::1] y,
                               real[:, ::1] dy, Py_ssize_t outer, Py_ssize_t inner):
    """Call the wrapper's second-order C function once without the GIL: the status."""
    cdef const cyad.cyad_function* function = cyad.function_of(wrapper)
    cdef int status
    with nogil:
        if real is double:
            status = function.second_f64(&x[0], &dx[0, 0], &y[0], &dy[0, 0], x.shape[0],
                                         y.shape[0], outer, inner, function.context)
        else:
            status = function.second_f32(&x[0], &dx[0, 0], &y[0], &dy[0, 0], x.shape[0],
                                         y.shape[0], outer, inner, function.context)
    return status


def raise_function_status(wrapper, int status):
    cyad.raise_function_status(wrapper, status)

"""Dual arrays inside differentiated functions behave like ndarrays.

Every case is checked with numbers: values against NumPy running the same code on
plain arrays, derivatives against analytic formulas. For affine code (indexing,
assignment, shifts) the analytic Jacobian is computed by NumPy itself, column j
being f(e_j) - f(0).
"""
import math
import operator
import threading

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import cyad

X = np.array([0.5, -1.25, 2.0, 0.75, 1.5])
C = np.array([2.0, -1.0, 0.5, 3.0, -0.25])
X2 = np.array([[0.5, -1.25, 2.0], [0.75, 1.5, -0.3]])
X3 = np.arange(24.0).reshape(2, 3, 4) / 7 - 1.1

TOL = dict(rtol=1e-13, atol=1e-15)


def identity(shape):
    """dx/dx for x of this shape: shape + shape."""
    return np.eye(int(np.prod(shape))).reshape(shape + shape)


def lift(a, k):
    """a with k trailing axes, to broadcast against a Jacobian over a k-dimensional x."""
    a = np.asarray(a)
    return a.reshape(a.shape + (1,) * k)


def affine_jacobian(f, x):
    """The Jacobian of an affine f by NumPy alone: column j is f(e_j) - f(0)."""
    f0 = np.asarray(f(np.zeros_like(x)))
    columns = [np.asarray(f(e.reshape(x.shape))) - f0 for e in np.eye(x.size)]
    return np.stack(columns, axis=-1).reshape(f0.shape + x.shape)


def product_rule(u, du, v, dv, x_shape):
    """d(u * v) = du * v + u * dv with NumPy broadcasting of u and v (du: u.shape + x_shape)."""
    u, v = np.asarray(u), np.asarray(v)
    shape = np.broadcast_shapes(u.shape, v.shape)
    k = len(x_shape)

    def spread(a):
        return np.broadcast_to(a, shape).reshape(shape + (1,) * k)

    def grow(d):
        return np.broadcast_to(d, shape + x_shape)

    return grow(du) * spread(v) + spread(u) * grow(dv)


def check(f, x, expected_jacobian):
    """cyad's value equals NumPy's f(x) and its Jacobian the expected one."""
    value, jac = cyad.value_and_jacobian(f, x)
    assert_allclose(value, f(x.copy()), **TOL)
    assert jac.shape == np.shape(value) + x.shape
    assert_allclose(jac, expected_jacobian, **TOL)


def check_affine(f, x):
    check(f, x, affine_jacobian(f, x))


# -- arithmetic with arrays and Python scalars -------------------------------------------

ARITHMETIC = [
    pytest.param(lambda x: 2 * x + 1, lambda x: 2 + 0 * x, id="2*x+1"),
    pytest.param(lambda x: x * 2.5 - 3, lambda x: 2.5 + 0 * x, id="x*2.5-3"),
    pytest.param(lambda x: 1 - x, lambda x: -1 + 0 * x, id="1-x"),
    pytest.param(lambda x: x / 4, lambda x: 0.25 + 0 * x, id="x/4"),
    pytest.param(lambda x: 3 / x, lambda x: -3 / x ** 2, id="3/x"),
    pytest.param(lambda x: x * C, lambda x: C, id="x*C"),
    pytest.param(lambda x: C * x, lambda x: C, id="C*x"),
    pytest.param(lambda x: C - x, lambda x: -1 + 0 * x, id="C-x"),
    pytest.param(lambda x: x - C, lambda x: 1 + 0 * x, id="x-C"),
    pytest.param(lambda x: x / C, lambda x: 1 / C, id="x/C"),
    pytest.param(lambda x: C / x, lambda x: -C / x ** 2, id="C/x"),
    pytest.param(lambda x: x + C * x, lambda x: 1 + C, id="x+C*x"),
    pytest.param(lambda x: x * x * x, lambda x: 3 * x ** 2, id="x*x*x"),
    pytest.param(lambda x: x ** 3, lambda x: 3 * x ** 2, id="x**3"),
    pytest.param(lambda x: x ** 2.0, lambda x: 2 * x, id="x**2.0"),
    pytest.param(lambda x: x ** -1, lambda x: -1 / x ** 2, id="x**-1"),
    pytest.param(lambda x: 2 ** x, lambda x: np.log(2) * 2 ** x, id="2**x"),
    pytest.param(lambda x: np.e ** x, lambda x: np.exp(x), id="e**x"),
    pytest.param(lambda x: np.abs(C) ** x, lambda x: np.log(np.abs(C)) * np.abs(C) ** x, id="C**x"),
    pytest.param(lambda x: -x + abs(x), lambda x: -1 + np.sign(x), id="-x+abs(x)"),
    pytest.param(lambda x: +x, lambda x: 1 + 0 * x, id="+x"),
    pytest.param(lambda x: np.int64(3) * x, lambda x: 3 + 0 * x, id="int64*x"),
    pytest.param(lambda x: np.float64(0.5) + x, lambda x: 1 + 0 * x, id="float64+x"),
    pytest.param(lambda x: x * np.float32(2), lambda x: 2 + 0 * x, id="x*float32"),
    pytest.param(lambda x: x * [1, 2, 3, 4, 5], lambda x: np.arange(1.0, 6.0), id="x*list"),
    pytest.param(lambda x: (1.0, 2.0, 3.0, 4.0, 5.0) - x, lambda x: -1 + 0 * x, id="tuple-x"),
    pytest.param(lambda x: (x + 1) * (x - 1) / (x * x + 1), lambda x: 4 * x / (x * x + 1) ** 2,
                 id="rational"),
    pytest.param(lambda x: np.exp(np.sin(x) * 2) / (1 + x ** 2),
                 lambda x: (np.exp(2 * np.sin(x)) * (2 * np.cos(x) * (1 + x ** 2) - 2 * x)
                            / (1 + x ** 2) ** 2),
                 id="exp(2sin(x))/(1+x**2)"),
]


@pytest.mark.parametrize("f, derivative", ARITHMETIC)
def test_arithmetic(f, derivative):
    check(f, X, np.diag(derivative(X)))


# -- broadcasting -----------------------------------------------------------------------------

S2 = X2.shape
I2 = identity(S2)
ROW = np.array([1.5, -2.0, 0.25])
COL = np.array([[3.0], [-0.5]])

BROADCASTING = [
    pytest.param(lambda x: x + ROW, lambda: I2, id="x+row"),
    pytest.param(lambda x: COL - x, lambda: -I2, id="col-x"),
    pytest.param(lambda x: x * ROW, lambda: product_rule(X2, I2, ROW, 0, S2), id="x*row"),
    pytest.param(lambda x: COL * x, lambda: product_rule(COL, 0, X2, I2, S2), id="col*x"),
    pytest.param(lambda x: x / np.array(4.0), lambda: I2 / 4, id="x/0d"),
    pytest.param(lambda x: x * x[0], lambda: product_rule(X2, I2, X2[0], I2[0], S2), id="x*x[0]"),
    pytest.param(lambda x: x * x[:, :1], lambda: product_rule(X2, I2, X2[:, :1], I2[:, :1], S2),
                 id="x*x[:,:1]"),
    pytest.param(lambda x: x[1, 2] * x, lambda: product_rule(X2[1, 2], I2[1, 2], X2, I2, S2),
                 id="x[1,2]*x"),
    pytest.param(lambda x: x[0][:, None] * x[1][None, :],
                 lambda: product_rule(X2[0][:, None], I2[0][:, None], X2[1][None, :],
                                      I2[1][None, :], S2),
                 id="outer"),
    pytest.param(lambda x: x[0] + x[:, 1:2], lambda: I2[0] + I2[:, 1:2], id="row+col"),
    pytest.param(lambda x: x[0, 0] + np.arange(4.0), lambda: np.broadcast_to(I2[0, 0], (4,) + S2),
                 id="0d+array"),
    pytest.param(lambda x: np.hypot(x, ROW),
                 lambda: lift(X2 / np.hypot(X2, ROW), 2) * I2, id="hypot(x,row)"),
]


@pytest.mark.parametrize("f, expected", BROADCASTING)
def test_broadcasting(f, expected):
    check(f, X2, expected())


# -- in-place operators ---------------------------------------------------------------------

def chain_in_place(x):
    y = x * 1.0
    y += x
    y -= 2
    y *= x
    y /= 3
    y **= 2
    return y


def test_in_place_chain():
    g = (2 * X - 2) * X / 3
    check(chain_in_place, X, np.diag(2 * g * (4 * X - 2) / 3))


def in_place_dual_exponent(x):
    y = x * 1.0 + 2
    y **= x
    return y


def test_in_place_power_with_dual_exponent():
    b = X + 2
    check(in_place_dual_exponent, X, np.diag(b ** X * (np.log(b) + X / b)))


def in_place_broadcast(x):
    y = x * 1.0
    y += ROW
    y *= x[:, :1]
    return y


def test_in_place_broadcast():
    check(in_place_broadcast, X2, product_rule(X2 + ROW, I2, X2[:, :1], I2[:, :1], S2))


def _in_place(statement):
    # f(x) running `statement` on y, a copy of x
    def f(x):
        y = x * 1.0
        exec(statement, {"np": np}, {"y": y, "x": x})
        return y
    f.__name__ = statement
    return f


IN_PLACE_AFFINE = [
    "y[1:] += x[:-1]",
    "y[::2] *= 2",
    "y[1:] -= 0.5",
    "y[1:] += y[:-1]",
    "y[:-1] += y[1:]",
    "y[::-1] += y",
    "y += y[0]",
    "y -= y[-1]",
    "y[2:] /= y[0:1] * 0 + 4",
    "y[1:] = y[:-1]",
    "y[:-1] = y[1:]",
    "y[1:][...] = y[:-1]",
    "y[:-1][...] = y[1:]",
    "np.add(y[1:], y[:-1], out=y[:-1])",
    "np.negative(y[:-1], out=y[1:])",
]


@pytest.mark.parametrize("statement", IN_PLACE_AFFINE)
def test_in_place_on_views_gives_numpys_answer(statement):
    check_affine(_in_place(statement), X)


IN_PLACE_AFFINE_2D = [
    "y[1:, :] += y[:-1, :]",
    "y[:, 1:] += y[:, :1]",
    "y += y[0]",
    "y -= y[1, 2]",
    "y[:, ::-1] *= y[0, 0] * 0 + 3",
]


@pytest.mark.parametrize("statement", IN_PLACE_AFFINE_2D)
def test_in_place_on_views_2d(statement):
    check_affine(_in_place(statement), X2)


IN_PLACE_EMPTY = [
    "y[5:] += x[:0]",
    "y[2:2] *= 3",
    "y[:0] -= y[5:]",
    "np.add(y[:0], x[5:], out=y[:0])",
]


@pytest.mark.parametrize("statement", IN_PLACE_EMPTY)
def test_in_place_on_empty_views(statement):
    # on a fresh thread, whose scratch buffer for overwritten operands is still unallocated:
    # an empty update must not ask it for 0 bytes (it raised MemoryError)
    errors = []

    def run():
        try:
            check_affine(_in_place(statement), X)
        except BaseException as error:     # re-raised below, on the test's thread
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


def test_in_place_product_with_overlapping_view():
    # y[i] = x[i] * x[i-1] for i >= 1, computed from the old values as NumPy does
    f = _in_place("y[1:] *= y[:-1]")
    expected = np.eye(5)
    for i in range(1, 5):
        expected[i, i] = X[i - 1]
        expected[i, i - 1] = X[i]
    check(f, X, expected)


# -- ufunc out= -----------------------------------------------------------------------------

def test_ufunc_out_returns_the_dual_it_wrote():
    def f(x):
        y = x * 0.0
        r = np.sin(x, out=y)
        assert r is y
        r = np.multiply(y, 3.0, out=(y,))
        assert r is y
        np.add(y, y, out=y)
        return y
    check(f, X, np.diag(6 * np.cos(X)))


def test_ufunc_out_into_slices():
    def f(x):
        y = x * 0.0
        np.sin(x[:-1], out=y[1:])
        return y
    expected = np.zeros((5, 5))
    expected[np.arange(1, 5), np.arange(4)] = np.cos(X[:-1])
    check(f, X, expected)


def test_ufunc_out_overlapping_its_input():
    def f(x):
        y = x * 1.0
        np.exp(y[:-1], out=y[1:])
        return y
    expected = np.zeros((5, 5))
    expected[0, 0] = 1
    expected[np.arange(1, 5), np.arange(4)] = np.exp(X[:-1])
    check(f, X, expected)


def test_ufunc_out_with_constant_inputs_zeroes_the_partials():
    def f(x):
        y = x * 1.0
        np.add(C[1:4], 1.0, out=y[1:4])
        return y
    check_affine(f, X)


def test_ufunc_operands_broadcast_into_out():
    # as in NumPy: out may be larger than the operands' broadcast shape, even overlapping them
    def f(x):
        y = x * 1.0
        np.exp(y[:1], out=y)
        np.multiply(y[:1], x[1:2], out=y[2:])
        return y
    expected = np.zeros((5, 5))
    expected[:2, 0] = np.exp(X[0])
    expected[2:, 0] = np.exp(X[0]) * X[1]
    expected[2:, 1] = np.exp(X[0])
    check(f, X, expected)


def test_ufunc_out_of_the_wrong_shape():
    with pytest.raises(ValueError):
        cyad.jacobian(lambda x: np.sin(x, out=x[:2] * 1.0), X)


# -- indexing --------------------------------------------------------------------------------

MASK1 = np.array([True, False, True, True, False])
MASK2 = X2 > 0.6
MASK3 = X3 > 0

KEYS = [
    (X, 0), (X, -1), (X, slice(1, 4)), (X, slice(None, None, -2)), (X, Ellipsis), (X, None),
    (X, (None, slice(None))), (X, (Ellipsis, None)), (X, ()), (X, np.array([0, 2, 2, 4])),
    (X, [4, 0]), (X, MASK1),
    (X2, 1), (X2, (1, 2)), (X2, (-1, -2)), (X2, (slice(None), 2)), (X2, (Ellipsis, 1)),
    (X2, (None, 1)), (X2, (1, None)), (X2, np.array([1, 0, 1])),
    (X2, (np.array([0, 1]), np.array([1, 2]))), (X2, (slice(None), np.array([2, 0]))),
    (X2, MASK2), (X2, np.array([True, False])), (X2, (slice(None, None, -1), slice(1, None, 2))),
    (X2, (1, Ellipsis, None)), (X2, Ellipsis),
    (X3, (1, slice(None), 2)), (X3, (Ellipsis, 0)),
    (X3, (np.array([1, 0]), slice(None), np.array([0, 3]))),
    (X3, (0, slice(1, 3), np.array([0, 2]))), (X3, (slice(None), np.array([[0, 1], [2, 2]]))),
    (X3, MASK3), (X3, (Ellipsis, None, 1)), (X3, (1, np.array([True, False, True]))),
    (X3, (slice(None), 1, slice(None, None, 3))),
]


@pytest.mark.parametrize("x, key", KEYS, ids=[f"{x.ndim}d-{k!r}" for x, k in KEYS])
def test_indexing(x, key):
    select = affine_jacobian(lambda a: a[key], x)
    check(lambda a: a[key], x, select)
    check(lambda a: a[key] * a[key], x, 2 * lift(x[key], x.ndim) * select)


@pytest.mark.parametrize("f", [lambda x: x[1][::2], lambda x: x[:, 1:][0],
                               lambda x: x[::-1][None][:, 1], lambda x: x[MASK2][1:]],
                         ids=["x[1][::2]", "x[:,1:][0]", "x[::-1][None][:,1]", "x[mask][1:]"])
def test_chained_indexing(f):
    check_affine(f, X2)


# -- assignment -------------------------------------------------------------------------------

ASSIGNMENTS = [
    (X, "y[1:3] = x[:2] * 2"),
    (X, "y[0] = 5.0"),
    (X, "y[::2] = np.array([1.0, 2.0, 3.0])"),
    (X, "y[np.array([True, False, True, True, False])] = 0.0"),
    (X, "y[[0, 3]] = x[[1, 1]]"),
    (X, "y[...] = x[::-1]"),
    (X, "y[...] = x * 3"),
    (X, "y[...] = 7.0"),
    (X, "y[2] = x[0]"),
    (X, "y[:] = x[0]"),
    (X2, "y[0] = x[1]"),
    (X2, "y[:, 0] = x[0, 0]"),
    (X2, "y[:, 1:] = x[:, :1]"),
    (X2, "y[1, :] = 2.0"),
    (X2, "y[1] = np.array([1.0, 2.0, 3.0])"),
    (X2, "y[..., 2] = x[..., 0] - x[..., 1]"),
    (X2, "y[X2 > 0.6] = x[X2 > 0.6] * 4"),
    (X3, "y[:, 1] = x[:, 0]"),
    (X3, "y[1, :, np.array([0, 3])] = x[0, :, np.array([1, 2])]"),
    (X3, "y[0, 0, 0] = 1.0"),
]


@pytest.mark.parametrize("x, statement", ASSIGNMENTS, ids=[s for _, s in ASSIGNMENTS])
def test_assignment(x, statement):
    def f(a):
        y = a * 0.5 + 1.0
        exec(statement, {"np": np, "X2": X2}, {"y": y, "x": a})
        return y
    check_affine(f, x)


def test_assignment_of_a_nonlinear_dual_through_a_mask():
    def f(x):
        y = x * 1.0
        y[MASK1] = x[MASK1] ** 2
        return y
    check(f, X, np.diag(np.where(MASK1, 2 * X, 1.0)))


def test_plain_value_assignment_zeroes_the_partials():
    def f(x):
        y = x * x
        y[1:3] = C[1:3]
        return y
    value, jac = cyad.value_and_jacobian(f, X)
    assert_array_equal(value[1:3], C[1:3])
    assert_array_equal(jac[1:3], 0.0)
    assert_allclose(np.diagonal(jac)[[0, 3, 4]], 2 * X[[0, 3, 4]], **TOL)


# -- shape attributes and iteration -------------------------------------------------------------

def test_shape_attributes():
    def f(x):
        assert x.shape == (2, 3)
        assert x.ndim == 2
        assert x.size == 6
        assert x.dtype == np.float64
        assert len(x) == 2
        assert x[0].shape == (3,) and len(x[0]) == 3
        assert x[0, 1].shape == () and x[0, 1].ndim == 0 and x[0, 1].size == 1
        return x
    cyad.jacobian(f, X2)

    def g(x):
        assert x.dtype == np.float32
        return x
    cyad.jacobian(g, X2.astype(np.float32))


def test_iteration():
    def f(x):
        rows = list(x)
        assert len(rows) == 2 and all(r.shape == (3,) for r in rows)
        first, second = x
        last, = list(reversed(x))[:1]
        return first * second + rows[0] - last
    check(f, X2, product_rule(X2[0], I2[0], X2[1], I2[1], S2) + I2[0] - I2[1])


def test_iteration_over_elements():
    # Python's sum over 0-d duals
    g = cyad.gradient(lambda x: sum(xi * xi for xi in x), X)
    assert_allclose(g, 2 * X, **TOL)


def test_zero_dimensional_dual_has_no_length():
    def f(t):
        with pytest.raises(TypeError):
            len(t)
        with pytest.raises(TypeError):
            iter(t).__next__()
        return t
    assert cyad.derivative(f, 1.0) == 1.0


# -- comparisons and control flow ------------------------------------------------------------

COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.parametrize("compare", COMPARISONS, ids=lambda c: c.__name__)
def test_comparisons_are_plain_booleans_of_the_values(compare):
    def f(x):
        for other, plain in [(0.75, 0.75), (C, C), (x[::-1], X[::-1]), (x[3], X[3])]:
            for result, expected in [(compare(x, other), compare(X, plain)),
                                     (compare(other, x), compare(plain, X))]:
                assert type(result) is np.ndarray and result.dtype == bool
                assert_array_equal(result, expected)
        return x
    cyad.jacobian(f, X)


@pytest.mark.parametrize("ufunc, args", [(np.greater, (0.5,)), (np.less_equal, (C,)),
                                         (np.isfinite, ()), (np.isnan, ()), (np.signbit, ()),
                                         (np.equal, (C,))],
                         ids=lambda a: getattr(a, "__name__", ""))
def test_boolean_ufuncs(ufunc, args):
    def f(x):
        result = ufunc(x, *args)
        assert type(result) is np.ndarray and result.dtype == bool
        assert_array_equal(result, ufunc(X, *args))
        assert_array_equal(np.logical_and(x > 0, x < 1.0), (X > 0) & (X < 1.0))
        return x
    cyad.jacobian(f, X)


def branch(x):
    if x[0] > 0:
        return x * 2
    return -x


@pytest.mark.parametrize("sign", [1, -1])
def test_control_flow_on_values(sign):
    check(branch, sign * X, np.eye(5) * (2 if sign > 0 else -1))


def test_loop_on_values():
    def f(x):
        y = x * 1.0
        while y[2] < 10:
            y = y * 2
        return y
    check(f, X, np.eye(5) * 8)    # 2 -> 4 -> 8 -> 16


def test_builtin_max_min_and_sorted():
    assert_array_equal(cyad.gradient(max, X), [0, 0, 1, 0, 0])
    assert_array_equal(cyad.gradient(min, X), [0, 1, 0, 0, 0])
    assert_array_equal(cyad.gradient(lambda x: sorted(x)[1] * 3, X), [3, 0, 0, 0, 0])


def test_mask_from_comparison():
    value, jac = cyad.value_and_jacobian(lambda x: x[x > 0.6] ** 2, X)
    assert_allclose(value, X[X > 0.6] ** 2, **TOL)
    expected = np.zeros((3, 5))
    expected[range(3), np.flatnonzero(X > 0.6)] = 2 * X[X > 0.6]
    assert_allclose(jac, expected, **TOL)


# -- a 0-d dual (derivative) -------------------------------------------------------------------

def scalar_function(t):
    assert t.shape == () and t.ndim == 0 and t.size == 1 and t.dtype == np.float64
    assert t[()].shape == () and t[...].shape == () and t[None].shape == (1,)
    u = t * 1.0
    u += 2.0
    u *= t              # (t + 2) t
    u **= 2             # (t + 2)^2 t^2
    v = u * 0.0
    np.sin(t, out=v)    # sin t
    if t > 0 and t >= 1.0 and not (t == 0):
        return u + v * t
    return -u


def test_zero_dimensional_dual():
    t = 1.5
    expected = 2 * (t + 2) * t ** 2 + 2 * (t + 2) ** 2 * t + np.sin(t) + t * np.cos(t)
    value, d = cyad.value_and_derivative(scalar_function, t)
    assert_allclose(value, (t + 2) ** 2 * t ** 2 + np.sin(t) * t, **TOL)
    assert_allclose(d, expected, **TOL)
    t = 0.5             # the other branch: -(t + 2)^2 t^2
    assert_allclose(cyad.derivative(scalar_function, t),
                    -(2 * (t + 2) * t ** 2 + 2 * (t + 2) ** 2 * t), **TOL)


def test_zero_dimensional_dual_with_array_output():
    def f(t):
        y = t * np.zeros(4)
        y[1] = t ** 2
        y[2] = 3.0
        y[3:] = np.sin(t) + t * np.arange(1.0, 2.0)
        return y
    t = 0.7
    assert_allclose(cyad.derivative(f, t), [0.0, 2 * t, 0.0, np.cos(t) + 1], **TOL)


# -- conversions that would drop the derivative --------------------------------------------------

def _into_plain_buffer(x):
    buf = np.zeros(3)
    buf[0] = x[0]
    return x


def _slice_into_plain_buffer(x):
    buf = np.zeros(5)
    buf[1:3] = x[1:3]
    return x


def _in_place_into_plain_buffer(x):
    buf = np.zeros(5)
    buf += x
    return x


CONVERSIONS = [
    pytest.param(lambda x: float(x[0]), id="float"),
    pytest.param(lambda x: int(x[0]), id="int"),
    pytest.param(lambda x: complex(x[0]), id="complex"),
    pytest.param(lambda x: math.exp(x[0]), id="math.exp"),
    pytest.param(lambda x: np.asarray(x), id="np.asarray"),
    pytest.param(lambda x: np.array(x), id="np.array"),
    pytest.param(lambda x: np.array([x[0], x[1]]), id="np.array-list"),
    pytest.param(lambda x: np.asarray([x[0], 1.0]), id="np.asarray-list"),
    pytest.param(_into_plain_buffer, id="buf[0]=x[0]"),
    pytest.param(_slice_into_plain_buffer, id="buf[1:3]=x[1:3]"),
    pytest.param(_in_place_into_plain_buffer, id="buf+=x"),
    pytest.param(lambda x: np.sin(x, out=np.empty(5)), id="sin-out-plain"),
    pytest.param(lambda x: np.add(x, 1.0, out=np.empty(5)), id="add-out-plain"),
    pytest.param(lambda x: np.multiply(2.0, x, out=(np.empty(5),)), id="multiply-out-plain-tuple"),
]


@pytest.mark.parametrize("f", CONVERSIONS)
def test_conversion_raises_type_error_with_hint(f):
    # the general hint, or the way out for what the line calls (tests/test_hints.py)
    with pytest.raises(TypeError, match=r"np\.zeros_like|math's functions take Python "
                       r"floats: use NumPy's|index the array instead"):
        cyad.jacobian(f, X)


@pytest.mark.parametrize("f", [float, np.asarray, lambda t: np.array([t, t])],
                         ids=["float", "asarray", "array"])
def test_zero_dimensional_conversion_raises_type_error_with_hint(f):
    with pytest.raises(TypeError, match=r"np\.zeros_like"):
        cyad.derivative(f, 1.0)


def test_dual_as_index_raises_type_error():
    with pytest.raises(TypeError, match="index"):
        cyad.jacobian(lambda x: x[x[0]], X)


# -- functions without a rule ---------------------------------------------------------------------

UNSUPPORTED = [
    pytest.param(lambda x: np.spacing(x), "spacing", id="spacing"),
    pytest.param(lambda x: np.nextafter(x, 0.0), "nextafter", id="nextafter"),
    pytest.param(lambda x: np.add.reduceat(x, [0, 1]), "add.reduceat", id="add.reduceat"),
    pytest.param(lambda x: np.sin(x, where=MASK1), "sin", id="sin-where"),
    pytest.param(lambda x: np.add(x, 1.0, dtype=np.float32), "add", id="add-dtype"),
]


@pytest.mark.parametrize("f, name", UNSUPPORTED)
def test_unsupported_ufunc_raises_type_error_naming_it(f, name):
    with pytest.raises(TypeError, match=rf"numpy\.{name}\b"):
        cyad.jacobian(f, X)


@pytest.mark.parametrize("f, derivative", [
    (lambda x: x % 2.0, lambda x: np.ones_like(x)),
    (lambda x: x // 2.0, np.zeros_like),
    (lambda x: 2.0 % x, lambda x: -np.floor(2.0 / x)),
], ids=["x%2", "x//2", "2%x"])
def test_floor_divide_and_remainder_operators(f, derivative):
    # between the jumps, a % b = a - b q with the quotient q = a // b constant
    np.testing.assert_array_equal(cyad.jacobian(f, X), np.diag(derivative(X)))


# -- duals of two differentiations ----------------------------------------------------------------

def _set_all(a, b):
    y = b * 1.0
    y[...] = a
    return y


def _set_one(a, b):
    y = b * 1.0
    y[0] = a[0]
    return y


def _add_in_place(a, b):
    y = b * 1.0
    y += a
    return y


NESTED_MIXES = [
    pytest.param(lambda a, b: a * b, id="a*b"),
    pytest.param(lambda a, b: b + a, id="b+a"),
    pytest.param(lambda a, b: a ** b, id="a**b"),
    pytest.param(lambda a, b: np.hypot(a, b), id="hypot"),
    pytest.param(lambda a, b: np.maximum(b, a[0]), id="maximum"),
    pytest.param(lambda a, b: np.sin(a * b) / (1.0 + b * b), id="sin(a*b)/(1+b^2)"),
    pytest.param(lambda a, b: a, id="return-outer"),
    # the outer dual written into an inner buffer (a tracer of the inner recording)
    pytest.param(_set_all, id="y[...]=a"),
    pytest.param(_set_one, id="y[0]=a[0]"),
    pytest.param(_add_in_place, id="y+=a"),
    pytest.param(lambda a, b: np.sin(a, out=b * 1.0), id="sin-out"),
]


@pytest.mark.parametrize("combine", NESTED_MIXES)
def test_duals_of_two_differentiations_nest(combine):
    # d/da of the Jacobian in b, against central differences of the plain inner Jacobian
    b0 = np.linspace(0.6, 1.4, 5)

    def inner_jacobian(a):
        return cyad.jacobian(lambda b: combine(a, b), b0)

    a0 = np.abs(X) + 0.25  # a ** b needs a > 0
    nested = cyad.jacobian(inner_jacobian, a0)
    h = 1e-6
    reference = np.stack([(inner_jacobian(a0 + h * e) - inner_jacobian(a0 - h * e)) / (2 * h)
                          for e in np.eye(a0.size)], axis=-1)
    np.testing.assert_allclose(nested, reference, rtol=1e-6, atol=1e-6)


def test_an_inner_function_cannot_write_into_an_outer_array():
    # the outer array holds no derivative of the inner differentiation: refused
    def outer(a):
        def inner(b):
            a[...] = b
            return b
        return cyad.jacobian(inner, np.ones(5))
    with pytest.raises(TypeError, match="cannot write into an array of the differentiation"):
        cyad.jacobian(outer, X)


# -- float32 -------------------------------------------------------------------------------------

X32 = np.abs(X).astype(np.float32) + np.float32(0.5)

FLOAT32_EXPRESSIONS = [
    pytest.param(lambda x: x * 2.5, id="x*2.5"),
    pytest.param(lambda x: 2.5 * x, id="2.5*x"),
    pytest.param(lambda x: x + 1, id="x+1"),
    pytest.param(lambda x: 1.0 - x, id="1.0-x"),
    pytest.param(lambda x: x / 3.0, id="x/3.0"),
    pytest.param(lambda x: 3.0 / x, id="3.0/x"),
    pytest.param(lambda x: x ** 2, id="x**2"),
    pytest.param(lambda x: x ** 0.5, id="x**0.5"),
    pytest.param(lambda x: 2.0 ** x, id="2.0**x"),
    pytest.param(lambda x: x ** x, id="x**x"),
    pytest.param(lambda x: np.sin(x), id="sin"),
    pytest.param(lambda x: np.maximum(x, 0.5), id="maximum"),
    pytest.param(lambda x: np.arctan2(x, 1.0), id="arctan2"),
    pytest.param(lambda x: np.hypot(2.0, x), id="hypot"),
    pytest.param(lambda x: np.logaddexp(x, 0.1), id="logaddexp"),
    pytest.param(lambda x: np.power(x, 3), id="power"),
    pytest.param(lambda x: -abs(x), id="-abs"),
    pytest.param(lambda x: x * np.float32(2), id="x*float32"),
    pytest.param(lambda x: (x * 1.5)[1:] * x[:-1], id="slices"),
    pytest.param(chain_in_place, id="in-place"),
    # promotions follow NumPy
    pytest.param(lambda x: x * np.float64(2), id="x*float64"),
    pytest.param(lambda x: x + np.ones(5), id="x+float64-array"),
    pytest.param(lambda x: x * np.arange(5), id="x*int-array"),
    pytest.param(lambda x: np.float_power(x, 2.0), id="float_power"),
]


@pytest.mark.parametrize("f", FLOAT32_EXPRESSIONS)
def test_float32_problem_gives_float32_results(f):
    # inside f, duals follow NumPy's promotion; the results come in the problem's dtype
    expected = f(X32.copy())
    value, jac = cyad.value_and_jacobian(f, X32)
    assert value.dtype == jac.dtype == np.float32
    assert_allclose(value, expected, rtol=1e-6)
    # derivative against a central difference in float64 at the float32 points
    x64 = X32.astype(np.float64)
    h = 1e-6
    fd = np.stack([(f(x64 + h * e) - f(x64 - h * e)) / (2 * h) for e in np.eye(5)], axis=-1)
    assert_allclose(jac, fd, rtol=1e-5, atol=1e-7)


def test_float32_stays_float32_inside():
    def f(x):
        for y in [x * 2.5, 1 + x, x / 3.0, 2.0 ** x, x ** 2, np.exp(x), x[0] * 1.5, x - x[1:2]]:
            assert y.dtype == np.float32
        y = x * 1.0
        y += 1.5
        y *= 0.5
        y **= 2.0
        assert y.dtype == np.float32
        return y
    assert cyad.jacobian(f, X32).dtype == np.float32

"""Second order: second_derivative, hvp, hessian and their value_* forms, against
analytic answers and finite differences of cyad's own (separately tested) gradient."""
import numpy as np
import pytest
from rosenbrock import rosenbrock, rosenbrock_gradient, rosenbrock_hessian, rosenbrock_in_place

import cyad

ISSUE_POINT = np.array([0.1, 0.2, 0.3])
ISSUE_HESSIAN = np.array([[-66.0, -40.0, 0.0], [-40.0, 130.0, -80.0], [0.0, -80.0, 200.0]])


def fd_hessian(f, x, h=1e-5):
    # central differences of cyad's gradient, column by column
    columns = [(cyad.gradient(f, x + h * e) - cyad.gradient(f, x - h * e)) / (2 * h)
               for e in np.eye(x.size)]
    return np.stack(columns, axis=-1)


def mixed(x):
    # every kind of operation: unary and binary rules, reductions, products of duals
    a = np.linspace(0.5, 1.5, x.size)
    return (np.sum(np.sin(x) * np.exp(0.3 * x)) + np.log1p(x @ x) + np.prod(a)
            + np.sum(x[:-1] / (2.0 + x[1:] ** 2)) + np.sum(np.sqrt(1.0 + (a @ x) ** 2))
            + np.dot(x, x[::-1]) * np.inner(x ** 2, a) + np.max(x * x) + (1.5 + x[0]) ** x[1])


def mixed_in_place(x):
    # mixed(x) again, with every intermediate that can be updated in place so updated
    a = np.linspace(0.5, 1.5, x.size)
    s = np.sin(x)
    s *= np.exp(0.3 * x)
    q = x[1:] ** 2
    q += 2.0
    np.divide(x[:-1], q, out=q)
    r = a[None] @ x     # shape (1,), so that out= takes it in plain NumPy too
    r **= 2
    r += 1.0
    np.sqrt(r, out=r)
    p = x ** 2
    p = np.inner(p, a)
    p *= np.dot(x, x[::-1])
    m = x * x
    t = x[None] @ x
    np.log1p(t, out=t)
    b = 1.5 + x[0]
    b **= x[1]
    return (np.sum(s) + np.sum(t) + np.prod(a) + np.sum(q) + np.sum(r) + p + np.max(m) + b)


ROSENBROCKS = [rosenbrock, rosenbrock_in_place]


# -- the issue's Hessian and the analytic one ---------------------------------------------

@pytest.mark.parametrize("f", ROSENBROCKS)
@pytest.mark.parametrize("chunk", [None, 1, 2, 3, 4])
def test_rosenbrock_hessian_at_the_issue_point(chunk, f):
    h = cyad.hessian(f, ISSUE_POINT, chunk=chunk)
    np.testing.assert_allclose(h, ISSUE_HESSIAN, rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("f", ROSENBROCKS)
@pytest.mark.parametrize("chunk", [None, 1, 4, 8, 11, 16])
def test_rosenbrock_hessian_is_exact_and_symmetric(chunk, f):
    x = np.linspace(-1.2, 1.3, 11)   # n = 11: chunks 4 and 8 leave a remainder
    h = cyad.hessian(f, x, chunk=chunk)
    np.testing.assert_allclose(h, rosenbrock_hessian(x), rtol=1e-13, atol=1e-10)
    np.testing.assert_array_equal(h, h.T)


@pytest.mark.parametrize("f", [mixed, mixed_in_place])
def test_hessian_of_many_operations_matches_finite_differences(f):
    x = np.linspace(-0.7, 0.9, 7)
    np.testing.assert_allclose(f(x), mixed(x), rtol=1e-14)
    np.testing.assert_allclose(cyad.hessian(f, x, chunk=3), fd_hessian(mixed, x),
                               rtol=1e-6, atol=1e-6)


# The three programs that first showed wrong Hessians through in-place operations: a
# result written into an operand of its own operation.
def square_in_place(x):
    y = x.copy()
    y **= 2
    return np.sum(y)


def exp_into_its_operand(x):
    y = x * 1.0
    np.exp(y, out=y)
    return np.sum(y)


def times_x_in_place(x):
    y = x * 1.0
    y *= x
    return np.sum(y)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, diagonal", [(square_in_place, lambda x: 2.0 + 0 * x),
                                         (exp_into_its_operand, np.exp),
                                         (times_x_in_place, lambda x: 2.0 + 0 * x)],
                         ids=["y**=2", "exp(y,out=y)", "y*=x"])
def test_in_place_operations_at_second_order(f, diagonal, dtype):
    x = np.array([1.0, 2.0, 3.0], dtype)
    tolerance = dict(rtol=1e-14) if dtype == np.float64 else dict(rtol=1e-6)
    expected = np.diag(diagonal(x.astype(np.float64)))
    np.testing.assert_allclose(cyad.hessian(f, x), expected, **tolerance)
    np.testing.assert_allclose(cyad.hvp(f, x, np.ones(3, dtype)), expected @ np.ones(3),
                               **tolerance)
    np.testing.assert_allclose(cyad.jacobian(lambda z: cyad.gradient(f, z), x), expected,
                               **tolerance)
    np.testing.assert_allclose(cyad.second_derivative(lambda t: f(t * x), 1.0), x @ expected @ x,
                               **tolerance)


def test_hessian_of_a_function_of_a_matrix():
    # f(X) = sum(X sin X) + trace(X X): d2/dX_ij dX_kl = (2 cos - x sin)(X_ij) [ij = kl]
    #                                                   + 2 [j = k][i = l]
    x = np.array([[0.3, -0.2, 0.5], [1.1, 0.4, -0.6], [0.2, 0.9, -1.3]])

    def f(x):
        return np.sum(x * np.sin(x)) + np.trace(x @ x)

    expected = np.zeros((3, 3, 3, 3))
    for i in range(3):
        for j in range(3):
            expected[i, j, i, j] += 2 * np.cos(x[i, j]) - x[i, j] * np.sin(x[i, j])
            expected[i, j, j, i] += 2.0
    h = cyad.hessian(f, x, chunk=4)
    assert h.shape == (3, 3, 3, 3)
    np.testing.assert_allclose(h, expected, rtol=1e-13, atol=1e-13)


def test_hessian_in_float32():
    x = ISSUE_POINT.astype(np.float32)
    h = cyad.hessian(rosenbrock, x, chunk=2)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, ISSUE_HESSIAN, rtol=1e-5, atol=1e-4)


def test_value_gradient_and_hessian():
    x = np.linspace(-1.0, 1.0, 6)
    value, g, h = cyad.value_gradient_and_hessian(rosenbrock, x, chunk=4)
    assert isinstance(value, float)
    assert value == pytest.approx(float(rosenbrock(x)), rel=1e-14)
    np.testing.assert_allclose(g, rosenbrock_gradient(x), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(h, rosenbrock_hessian(x), rtol=1e-13, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_operands_broadcast_into_a_larger_out_at_second_order(dtype):
    # y = [E, E, E x1, E x1, E x1] with E = exp(x0), written by ufuncs broadcasting a slice of
    # y into y itself; s = w @ y = (w0 + w1) E + W E x1 with W = w2 + w3 + w4
    w = np.array([0.5, -1.0, 2.0, 0.25, 1.5])

    def f(x):
        y = x * 1.0
        np.exp(y[:1], out=y)
        np.multiply(y[:1], x[1:2], out=y[2:])
        return np.sum(w.astype(x.dtype) * y)

    x = np.array([0.3, -0.7, 1.1, 0.4, 0.9], dtype)
    e, x1, big_w = np.exp(0.3), float(x[1]), w[2:].sum()
    expected = np.zeros((5, 5))
    expected[0, 0] = (w[0] + w[1]) * e + big_w * e * x1
    expected[0, 1] = expected[1, 0] = big_w * e
    tolerance = dict(rtol=1e-14, atol=1e-14) if dtype == np.float64 else dict(rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(cyad.hessian(f, x), expected, **tolerance)
    np.testing.assert_allclose(cyad.hvp(f, x, np.ones(5, dtype)), expected @ np.ones(5),
                               **tolerance)


# -- hvp ------------------------------------------------------------------------------------

@pytest.mark.parametrize("f", ROSENBROCKS)
@pytest.mark.parametrize("chunk", [None, 1, 5, 16])
def test_hvp_is_the_hessian_times_v(chunk, f):
    x = np.linspace(-1.1, 1.4, 13)
    v = np.cos(np.arange(13.0))
    np.testing.assert_allclose(cyad.hvp(f, x, v, chunk=chunk),
                               rosenbrock_hessian(x) @ v, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("f", [mixed, mixed_in_place])
def test_hvp_of_a_tuple_of_tangents_and_gradient_and_hvp(f):
    x = np.linspace(-0.7, 0.9, 7)
    vs = (np.ones(7), np.arange(7.0), np.sin(np.arange(7.0)))
    reference = fd_hessian(mixed, x)
    g, products = cyad.gradient_and_hvp(f, x, vs, chunk=3)
    assert isinstance(products, tuple) and len(products) == 3
    np.testing.assert_allclose(g, cyad.gradient(mixed, x), rtol=1e-14)
    for v, hv in zip(vs, products):
        np.testing.assert_allclose(hv, reference @ v, rtol=1e-6, atol=1e-5)


# -- second_derivative ---------------------------------------------------------------------

def test_second_derivative_of_a_vector_valued_function():
    def f(t):
        return np.stack([np.sin(t), t ** 3, np.exp(2.0 * t) / (1.0 + t)])

    t = 0.3
    expected = np.array([-np.sin(t), 6 * t,
                         np.exp(2 * t) * (4 / (1 + t) - 4 / (1 + t) ** 2 + 2 / (1 + t) ** 3)])
    np.testing.assert_allclose(cyad.second_derivative(f, t), expected, rtol=1e-14)
    value, d, dd = cyad.value_derivative_and_second_derivative(f, t)
    np.testing.assert_allclose(value, [np.sin(t), t ** 3, np.exp(2 * t) / (1 + t)], rtol=1e-15)
    np.testing.assert_allclose(d, [np.cos(t), 3 * t * t,
                                   np.exp(2 * t) * (2 / (1 + t) - 1 / (1 + t) ** 2)], rtol=1e-14)
    np.testing.assert_allclose(dd, expected, rtol=1e-14)


def test_second_derivative_of_a_scalar_function_is_a_float():
    dd = cyad.second_derivative(lambda t: t ** 4 - np.cos(t), 0.5)
    assert isinstance(dd, float)
    assert dd == pytest.approx(12 * 0.25 + np.cos(0.5), rel=1e-14)


def test_second_derivative_in_float32():
    dd = cyad.second_derivative(lambda t: np.tanh(t) * t, np.float32(0.7))
    t = 0.7
    sech2 = 1 / np.cosh(t) ** 2
    assert dd == pytest.approx(2 * sech2 - 2 * t * sech2 * np.tanh(t), rel=1e-5)


# -- prep reuse, out=, the two-argument form ---------------------------------------------

def test_prepared_hessian_with_out_is_reused_at_other_points():
    x = np.linspace(-1.0, 1.0, 9)
    prep = cyad.prepare_hessian(rosenbrock, x, chunk=4)
    out = np.zeros((9, 9))
    for shift in (0.0, 0.3, -0.2):
        assert cyad.hessian(rosenbrock, x + shift, prep=prep, out=out) is out
        np.testing.assert_allclose(out, rosenbrock_hessian(x + shift), rtol=1e-13, atol=1e-10)
    triple = (np.zeros(()), np.zeros(9), np.zeros((9, 9)))
    assert cyad.value_gradient_and_hessian(rosenbrock, x, prep=prep, out=triple) is triple
    assert triple[0] == pytest.approx(float(rosenbrock(x)), rel=1e-14)
    np.testing.assert_allclose(triple[1], rosenbrock_gradient(x), rtol=1e-13, atol=1e-12)


def test_prepared_hvp_and_second_derivative_with_out():
    x = np.linspace(-1.0, 1.0, 9)
    v = np.arange(9.0)
    prep = cyad.prepare_hvp(rosenbrock, x, v)
    out, pair = np.zeros(9), (np.zeros(9), np.zeros(9))
    assert cyad.hvp(rosenbrock, x, v, prep=prep, out=out) is out
    np.testing.assert_allclose(out, rosenbrock_hessian(x) @ v, rtol=1e-12, atol=1e-10)
    assert cyad.gradient_and_hvp(rosenbrock, x, 2 * v, prep=prep, out=pair) is pair
    np.testing.assert_allclose(pair[1], 2 * rosenbrock_hessian(x) @ v, rtol=1e-12, atol=1e-10)

    f = lambda t: np.stack([np.sin(t), np.cos(t)])  # noqa: E731
    prep = cyad.prepare_second_derivative(f, 0.2)
    out = np.zeros(2)
    assert cyad.second_derivative(f, 0.4, prep=prep, out=out) is out
    np.testing.assert_allclose(out, [-np.sin(0.4), -np.cos(0.4)], rtol=1e-15)


def two_argument_form(y, x):
    y[...] = np.sum(x ** 3) * x[0]


def two_argument_form_reading_y(y, x):
    # the same value, with y read back after each write
    y[...] = np.sum(x ** 3)
    y *= x[0]
    np.multiply(y, 1.0, out=y)


@pytest.mark.parametrize("f", [two_argument_form, two_argument_form_reading_y])
def test_two_argument_form(f):
    x = np.array([0.5, -1.0, 2.0])
    y = np.zeros(())
    h = cyad.hessian(f, x, y=y)
    expected = np.diag(6 * x * x[0])
    expected[0, :] += 3 * x ** 2
    expected[:, 0] += 3 * x ** 2
    np.testing.assert_allclose(h, expected, rtol=1e-14)
    assert y == pytest.approx(np.sum(x ** 3) * x[0])


def test_evaluations_exploit_symmetry():
    # chunks of 4 over n = 12: 3 + 2 + 1 evaluations, not 3 x 3
    assert cyad.prepare_hessian(rosenbrock, np.ones(12), chunk=4, engine="dual").evaluations == 6
    assert cyad.prepare_hessian(rosenbrock, np.ones(12), engine="dual").evaluations == 1


# -- wrong use -------------------------------------------------------------------------------

def test_hessian_of_a_vector_valued_function_is_refused():
    with pytest.raises(ValueError, match="scalar-valued"):
        cyad.hessian(np.sin, np.ones(3))
    with pytest.raises(ValueError, match="scalar-valued"):
        cyad.hvp(np.sin, np.ones(3), np.ones(3))


def test_second_derivative_of_an_array_is_refused():
    with pytest.raises(ValueError, match="scalar x"):
        cyad.second_derivative(np.sin, np.ones(3))


def test_a_prep_checks_its_calls():
    x = np.ones(4)
    prep = cyad.prepare_hessian(rosenbrock, x)
    with pytest.raises(ValueError, match="shape"):
        cyad.hessian(rosenbrock, np.ones(5), prep=prep)
    with pytest.raises(ValueError, match="shape"):
        cyad.hessian(rosenbrock, x, prep=prep, out=np.zeros((4, 5)))
    with pytest.raises(ValueError, match="made for hessian"):
        cyad.hvp(rosenbrock, x, x, prep=prep)
    with pytest.raises(ValueError, match="tangent"):
        cyad.hvp(rosenbrock, x, (x, x), prep=cyad.prepare_hvp(rosenbrock, x, x))
    # and it still works afterwards
    np.testing.assert_allclose(cyad.hessian(rosenbrock, x, prep=prep), rosenbrock_hessian(x))


def test_an_exception_in_f_propagates_and_the_prep_survives():
    calls = []

    def f(x):
        calls.append(1)
        if len(calls) == 3:
            raise ArithmeticError("boom")
        return rosenbrock(x)

    x = np.linspace(0.0, 1.0, 5)
    prep = cyad.prepare_hessian(f, x, chunk=2, engine="dual")   # f runs in every call
    with pytest.raises(ArithmeticError, match="boom"):
        cyad.hessian(f, x, prep=prep)
    np.testing.assert_allclose(cyad.hessian(f, x, prep=prep), rosenbrock_hessian(x), rtol=1e-13)


def test_second_order_inside_a_differentiation_of_a_constant():
    # the inner second derivative does not involve t: a constant factor
    assert cyad.derivative(lambda t: cyad.second_derivative(np.sin, 0.5) * t, 1.0) == \
        pytest.approx(-np.sin(0.5), rel=1e-15)


# -- allocations ----------------------------------------------------------------------------

@pytest.mark.parametrize("operator", ["hessian", "hvp"])
def test_cyad_adds_nothing_to_what_f_allocates(operator, allocations_per_call):
    n = 9
    x = np.linspace(0.1, 1.2, n)
    w = np.linspace(1.0, 2.0, n)

    def f(x):
        return (x * x * w).sum()

    v = np.ones(n)
    if operator == "hessian":
        prep = cyad.prepare_hessian(f, x, chunk=4, engine="dual")
        out = np.zeros((n, n))
        call = lambda: cyad.hessian(f, x, prep=prep, out=out)  # noqa: E731
        expected = np.diag(2 * w)
    else:
        prep = cyad.prepare_hvp(f, x, v, chunk=4, engine="dual")
        out = np.zeros(n)
        call = lambda: cyad.hvp(f, x, v, prep=prep, out=out)  # noqa: E731
        expected = 2 * w
    call()
    np.testing.assert_allclose(out, expected, rtol=1e-14)
    per_call = allocations_per_call(call)
    per_evaluation = allocations_per_call(lambda: f(prep.input_dual))
    assert per_evaluation > 0
    assert per_call == pytest.approx(prep.evaluations * per_evaluation, abs=0.01)


def test_a_prepared_hessian_of_a_function_that_allocates_nothing(allocations_per_call):
    def constant(x):
        return 2.5

    x = np.arange(6.0)
    prep = cyad.prepare_hessian(constant, x, chunk=2)
    out = np.ones((6, 6))
    triple = (np.zeros(()), np.zeros(6), np.zeros((6, 6)))
    assert allocations_per_call(lambda: cyad.hessian(constant, x, prep=prep, out=out)) == 0
    assert allocations_per_call(
        lambda: cyad.value_gradient_and_hessian(constant, x, prep=prep, out=triple)) == 0
    np.testing.assert_array_equal(out, 0.0)
    assert triple[0] == 2.5


def test_a_prepared_hvp_of_a_batch_allocates_nothing(allocations_per_call):
    def constant(x):
        return 2.5

    x = np.arange(6.0)
    tangents = (np.ones(6), np.arange(6.0))
    prep = cyad.prepare_hvp(constant, x, tangents)
    outs = (np.ones(6), np.ones(6))
    assert allocations_per_call(lambda: cyad.hvp(constant, x, tangents, prep=prep, out=outs)) == 0
    np.testing.assert_array_equal(outs[0], 0.0)
    np.testing.assert_array_equal(outs[1], 0.0)

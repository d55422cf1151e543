"""Nested differentiation: an operator inside a function cyad differentiates keeps each
differentiation's perturbations apart."""
import numpy as np
import pytest

import cyad
from cyad import derivative, gradient, jacobian, pushforward


def test_the_perturbation_confusion_example():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1 (confusing the two gives 2)
    assert derivative(lambda x: x * derivative(lambda y: x + y, 1.0), 1.0) == 1.0


def test_an_inner_derivative_of_a_constant_is_zero():
    assert derivative(lambda x: derivative(lambda y: x, x), 1.0) == 0.0


def test_jacobian_of_a_gradient_is_the_matrix():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((10, 8))
    x0, y0 = rng.standard_normal(8), rng.standard_normal(10)
    j = jacobian(lambda x: gradient(lambda y: y @ (a @ x), y0), x0)
    assert j.shape == (10, 8)
    np.testing.assert_allclose(j, a, rtol=1e-14, atol=1e-14)


def test_gradient_of_a_function_calling_derivative_on_a_closure():
    # f(x) = d/dt sum(sin(t x)) at t = 0.5 = sum(x cos(x / 2))
    def f(x):
        return derivative(lambda t: np.sum(np.sin(t * x)), 0.5)

    x = np.array([0.3, -1.2, 2.0, 0.7])
    np.testing.assert_allclose(gradient(f, x), np.cos(x / 2) - x / 2 * np.sin(x / 2),
                               rtol=1e-14)


def doubled_in_place_squared(y):
    # writes into its input, as plain NumPy code may
    y *= 2.0
    return np.sum(y * y)


def test_an_inner_function_writing_into_its_input_leaves_the_outer_one_alone():
    # d/dx [grad_y (sum (2y)^2) at y = x  + x] = 8 I + I: the inner f's in-place update
    # must touch neither the outer dual x nor a plain x of the caller
    x0 = np.array([0.5, -1.0, 2.0])
    j = jacobian(lambda x: gradient(doubled_in_place_squared, x) + x, x0)
    np.testing.assert_allclose(j, 9.0 * np.eye(3), rtol=1e-15)
    plain = x0.copy()
    derivative(lambda t: t * np.sum(gradient(doubled_in_place_squared, plain)), 1.0)
    np.testing.assert_array_equal(plain, x0)


def test_the_inner_call_may_take_the_outer_dual_as_its_input():
    # d/dx [d/dy sin(x y) at y = x] = d/dx [x cos(x^2)] = cos(x^2) - 2 x^2 sin(x^2)
    x = 0.7
    expected = np.cos(x * x) - 2 * x * x * np.sin(x * x)
    assert derivative(lambda x: derivative(lambda y: np.sin(x * y), x), x) == pytest.approx(
        expected, rel=1e-14)


def test_a_hessian_as_the_jacobian_of_a_gradient():
    def f(x):
        return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    x = np.array([0.1, 0.2, 0.3])
    h = jacobian(lambda x: gradient(f, x), x)
    np.testing.assert_allclose(h, cyad.hessian(f, x), rtol=1e-14)
    np.testing.assert_allclose(h, [[-66, -40, 0], [-40, 130, -80], [0, -80, 200]], atol=1e-12)


def test_nested_pushforward_with_tangents_of_the_outer_differentiation():
    # g(s) = J_f(x(s)) @ v(s) with f = sin, x(s) = s, v(s) = s^2 (elementwise)
    # g = cos(s) s^2, g' = -sin(s) s^2 + 2 s cos(s)
    def g(s):
        return pushforward(np.sin, s, s * s)

    s = np.array([0.4, -0.9])
    expected = np.diag(-np.sin(s) * s * s + 2 * s * np.cos(s))
    np.testing.assert_allclose(jacobian(g, s), expected, rtol=1e-14)


def test_matrix_products_of_two_differentiations():
    # d/da of the gradient of b -> (a b) @ M @ (a b), a product of duals of both
    m = np.array([[2.0, 0.5], [0.5, 1.0]])
    b0 = np.array([0.3, -0.4])

    def inner_gradient(a):
        return gradient(lambda b: (a * b) @ m @ (a * b), b0)

    def plain(a):
        return 2 * a * (m @ (a * b0))

    a = np.array([1.2, 0.7])
    h = 1e-6
    reference = np.stack([(plain(a + h * e) - plain(a - h * e)) / (2 * h) for e in np.eye(2)],
                         axis=-1)
    np.testing.assert_allclose(jacobian(inner_gradient, a), reference, rtol=1e-8)


def test_nonlinear_linear_algebra_of_nested_duals():
    # d/dy_i det(diag(x * y)) = x_i prod_(j != i) x_j y_j, prod(x) at y = 1, whose Jacobian
    # in x is prod(x) / x_k in every row
    def f(x):
        return gradient(lambda y: np.linalg.det(np.diag(x * y)), np.ones(3))

    x = np.array([1.5, 2.0, -0.5])
    expected = np.broadcast_to(np.prod(x) / x, (3, 3))
    np.testing.assert_allclose(jacobian(f, x), expected, rtol=1e-13)


def test_a_c_function_inside_a_differentiation(example):
    f = example.robertson_function()
    u = np.array([1.0, 2e-5, 3e-5])
    total = np.sum(cyad.jacobian(f, u))

    # on plain inputs it runs as usual; on the outer differentiation's duals it cannot
    assert derivative(lambda s: s * np.sum(cyad.jacobian(f, u)), 2.0) == pytest.approx(total)
    with pytest.raises(TypeError, match="C function"):
        derivative(lambda s: cyad.pushforward(f, u * s, u), 1.0)


def test_nested_value_and_operators_return_duals_of_the_outer_differentiation():
    # d/dx of the value x y^2 at y = 2 is 4; of its derivative 2 x y, 4; of the gradient, 2 y
    assert derivative(lambda x: cyad.value_and_derivative(lambda y: x * y * y, 2.0)[0],
                      3.0) == pytest.approx(4.0)
    assert derivative(lambda x: cyad.value_and_derivative(lambda y: x * y * y, 2.0)[1],
                      3.0) == pytest.approx(4.0)
    y0 = np.array([1.0, -2.0])
    np.testing.assert_allclose(
        jacobian(lambda x: cyad.value_and_gradient(lambda y: x[0] * np.sum(y * y), y0)[1],
                 np.array([3.0, 5.0])),
        [[2.0, 0.0], [-4.0, 0.0]], rtol=1e-15)


def test_nesting_is_tracked_per_thread():
    # another thread's differentiation starts before this one and ends inside it: neither
    # may be taken for a level of the other
    import threading

    inside, release, results = threading.Event(), threading.Event(), []

    def waiting(x):
        inside.set()
        release.wait(10)
        return x * x

    worker = threading.Thread(target=lambda: results.append(derivative(waiting, 3.0)))
    worker.start()
    assert inside.wait(10)

    def outer(x):
        release.set()
        worker.join(10)
        return x * derivative(lambda y: x + y, 1.0)

    assert derivative(outer, 1.0) == 1.0
    assert results == [6.0]


def test_the_two_argument_form_inside_a_differentiation():
    # y a dual of the outer differentiation: f's value (with its outer partials) lands in it
    w0 = np.array([0.4, -1.2, 2.0])

    def g(y, w):
        y[...] = 2.0 * np.sin(w)

    def outer(s):
        y = 0.0 * s * np.ones(3)
        jac = cyad.jacobian(g, w0 * s, y=y)
        return np.sum(jac) + np.sum(y)

    for s in (0.7, 1.3):
        expected = np.sum(-2.0 * np.sin(w0 * s) * w0 + 2.0 * np.cos(w0 * s) * w0)
        np.testing.assert_allclose(cyad.derivative(outer, s), expected, rtol=1e-14)

    # a plain y cannot hold a value that depends on the outer differentiation
    def plain(s):
        return cyad.jacobian(g, w0 * s, y=np.zeros(3))

    with pytest.raises(TypeError, match="y must be an array of it"):
        cyad.derivative(plain, 1.0)

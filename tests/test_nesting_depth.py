"""Derivatives of any order by nesting, on every engine and across them, against JAX.

A cyad operator called inside a function cyad differentiates derives a program of its own
(cyad/_nested.py): these tests cross the outer and inner engines (and a third level's),
the operators of first and second order at every level, perturbation confusion at depth
3 and 4, prepared outer tapes that replay the inner derivatives compiled, guards inside
inner functions, float32, and what is refused.
"""
import itertools

import numpy as np
import pytest
from derivative_references import jax
from scenarios import ENGINES

import cyad

pytestmark = [pytest.mark.skipif(jax is None, reason="JAX is the reference"),
              pytest.mark.xdist_group("test_nesting_depth")]
if jax is not None:
    import jax.numpy as jnp

PAIRS = list(itertools.product(ENGINES, ENGINES))
TRIPLES = list(itertools.product(ENGINES, ENGINES, ENGINES))
X = np.array([0.3, -0.7, 1.1, 0.5])
V = np.array([1.0, 0.5, -0.3, 0.2])
W = np.array([0.2, -1.0, 0.4, 0.9])


def f_np(x):
    return np.sum(np.sin(x) * x ** 2) + np.prod(np.tanh(x[:3])) + np.exp(x[0] * x[3])


def f_jax(x):
    return jnp.sum(jnp.sin(x) * x ** 2) + jnp.prod(jnp.tanh(x[:3])) + jnp.exp(x[0] * x[3])


def g_np(x):
    return np.sin(x) * x[::-1] ** 2 + np.log1p(x * x)


def g_jax(x):
    return jnp.sin(x) * x[::-1] ** 2 + jnp.log1p(x * x)


def close(actual, expected, rtol=1e-11):
    np.testing.assert_allclose(np.asarray(actual, np.float64), np.asarray(expected), rtol=rtol,
                               atol=rtol)


_REFERENCES = {}


def reference(name, function, *args):
    """jax.jit(function)(*args): JAX's reference compiled as one function and computed once
    per name and arguments, for every combination of engines that checks against it."""
    key = (name, *((np.shape(a), np.result_type(a).str, np.asarray(a).tobytes()) for a in args))
    if key not in _REFERENCES:
        _REFERENCES[key] = jax.jit(function)(*args)
    return _REFERENCES[key]


def jax_third_derivative(t):
    return reference("third-derivative", jax.grad(jax.grad(jax.grad(
        lambda s: f_jax(X + s * V)))), t)


def jax_gradient_of_hvp(x):
    return reference("gradient-of-hvp", jax.grad(
        lambda x: jnp.dot(W, jax.jvp(jax.grad(f_jax), (x,), (V,))[1])), x)


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_a_third_derivative(outer, inner):
    expected = jax_third_derivative(0.0)
    actual = cyad.derivative(
        lambda t: cyad.second_derivative(lambda s: f_np(X + s * V), t, engine=inner), 0.0,
        engine=outer)
    close(actual, expected)


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_the_gradient_of_an_hvp(outer, inner):
    expected = jax_gradient_of_hvp(X)
    actual = cyad.gradient(lambda x: W @ cyad.hvp(f_np, x, V, engine=inner), X, engine=outer)
    close(actual, expected)


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_the_hessian_of_a_function_calling_gradient(outer, inner):
    expected = reference("hessian-of-gradient",
                         jax.hessian(lambda x: jnp.sum(jax.grad(f_jax)(x) ** 2)), X)
    actual = cyad.hessian(lambda x: np.sum(cyad.gradient(f_np, x, engine=inner) ** 2), X,
                          engine=outer)
    close(actual, expected)
    along = cyad.hvp(lambda x: np.sum(cyad.gradient(f_np, x, engine=inner) ** 2), X, V,
                     engine=outer)
    close(along, expected @ V)


@pytest.mark.parametrize("first, second, third", TRIPLES)
def test_a_jacobian_of_a_jacobian_of_a_jacobian(first, second, third):
    expected = reference("third-jacobian", jax.jacfwd(jax.jacfwd(jax.jacfwd(g_jax))), X)
    actual = cyad.jacobian(
        lambda x: cyad.jacobian(lambda y: cyad.jacobian(g_np, y, engine=third), x,
                                engine=second), X, engine=first)
    assert actual.shape == (4, 4, 4, 4)
    close(actual, expected)


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_pullbacks_pushforwards_and_hessians_inside(outer, inner):
    def inner_ops(x):
        pulled = cyad.pullback(g_np, x, W * x, engine=inner)
        pushed = cyad.pushforward(g_np, x, (V, x), engine=inner)
        h = cyad.hessian(f_np, x, engine=inner)
        return pulled + pushed[0] * pushed[1] + h @ x

    def inner_jax(x):
        pulled = jax.vjp(g_jax, x)[1](W * x)[0]
        pushed = [jax.jvp(g_jax, (x,), (t,))[1] for t in (jnp.asarray(V), x)]
        return pulled + pushed[0] * pushed[1] + jax.hessian(f_jax)(x) @ x

    close(cyad.jacobian(inner_ops, X, engine=outer),
          reference("pullbacks-inside", jax.jacfwd(inner_jax), X))


@pytest.mark.parametrize("engines", TRIPLES)
def test_no_perturbation_confusion_at_depth_three(engines):
    a, b, c = (lambda f, x, e=e: cyad.derivative(f, x, engine=e) for e in engines)
    # d/dx [x d/dy [x y d/dz (x + y + z)]] at 1 = d/dx x^2 = 2
    assert a(lambda x: x * b(lambda y: x * y * c(lambda z: x + y + z, 1.0), 1.0), 1.0) == 2.0
    # d/dx [d/dy [d/dz (x y z)^2 at z = x] at y = x]: JAX's
    expected = reference("depth-three", jax.grad(lambda x: jax.grad(lambda y: jax.grad(
        lambda z: (x * y * z) ** 2)(x))(x)), 0.7)
    actual = a(lambda x: b(lambda y: c(lambda z: (x * y * z) ** 2, x), x), 0.7)
    close(actual, expected)


@pytest.mark.parametrize("engines", list(itertools.product(ENGINES, repeat=4)))
def test_no_perturbation_confusion_at_depth_four(engines):
    d1, d2, d3, d4 = (lambda f, x, e=e: cyad.derivative(f, x, engine=e) for e in engines)

    def nested(D1, D2, D3, D4):
        return D1(lambda w: w * D2(
            lambda x: w * x * D3(lambda y: w + x * y * D4(
                lambda z: w * x * y * z + np.sin(w * z), 1.3), 0.4), 0.9), 0.6)

    def jax_nested(D1, D2, D3, D4):
        return D1(lambda w: w * D2(
            lambda x: w * x * D3(lambda y: w + x * y * D4(
                lambda z: w * x * y * z + jnp.sin(w * z), 1.3), 0.4), 0.9), 0.6)

    derivative = jax.grad
    expected = reference("depth-four",
                         lambda: jax_nested(*[lambda f, x: derivative(f)(x)] * 4))
    close(nested(d1, d2, d3, d4), expected)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_fourth_derivative_and_higher(engine):
    def nth(f, n):
        if n == 0:
            return f
        inner = nth(f, n - 1)
        return lambda t: cyad.derivative(inner, t, engine=engine)

    for n, expected in [(4, np.sin(0.4)), (5, np.cos(0.4)), (6, -np.sin(0.4))]:
        close(nth(np.sin, n)(0.4), expected)
    close(nth(lambda t: np.exp(2.0 * t), 5)(0.3), 32.0 * np.exp(0.6))


@pytest.mark.parametrize("inner", ENGINES)
def test_a_prepared_tape_replays_an_inner_derivative_compiled(inner):
    # the third derivative along V, prepared once: every call replays the tape, which holds
    # the inner second derivative as instructions
    def third(t):
        return cyad.second_derivative(lambda s: f_np(X + s * V), t, engine=inner)

    prep = cyad.prepare_derivative(third, 0.0, engine="tape")
    for t in (0.0, 0.3, -1.1):
        close(cyad.derivative(third, t, prep=prep), jax_third_derivative(t))
    assert prep.engine_state.records == 1

    def gradient_of_hvp(x):
        return W @ cyad.hvp(f_np, x, V, engine=inner)

    prep = cyad.prepare_gradient(gradient_of_hvp, X, engine="tape")
    out = np.empty(4)
    for x in (X, X * 0.5, X[::-1].copy()):
        close(cyad.gradient(gradient_of_hvp, x, prep=prep, out=out), jax_gradient_of_hvp(x))
    assert prep.engine_state.records == 1


def test_a_guard_inside_an_inner_function_records_the_outer_tape_anew():
    # the inner f branches on its outer value: the outer tape holds the guard
    def inner(y, x):
        return y ** 3 if np.sum(x > 0) > 1 else -y * x[0]

    def outer(x):
        return cyad.derivative(lambda y: inner(y, x) * x[1], 2.0)

    prep = cyad.prepare_gradient(outer, X, engine="tape")
    for x, expected in [(np.array([1.0, 2.0, -1.0, 0.5]), [0.0, 12.0, 0.0, 0.0]),
                        (np.array([1.0, -2.0, -1.0, -0.5]), [2.0, -1.0, 0.0, 0.0])]:
        close(cyad.gradient(outer, x, prep=prep), expected)
        close(cyad.gradient(outer, x, engine="dual"), expected)
    assert prep.engine_state.records == 2


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_float32(outer, inner):
    x, v = X.astype(np.float32), V.astype(np.float32)
    expected = jax_gradient_of_hvp(X)
    actual = cyad.gradient(lambda x: W.astype(np.float32) @ cyad.hvp(f_np, x, v, engine=inner),
                           x, engine=outer)
    assert actual.dtype == np.float32
    close(actual, expected, rtol=2e-4)


@pytest.mark.parametrize("outer, inner", PAIRS)
def test_the_two_argument_form_and_out_inside(outer, inner):
    def residual(y, x):
        y[...] = np.sin(x) * x[0]

    def f(x):
        y = x * 0.0
        jac = np.zeros_like(x, shape=(4, 4)) * x[0]
        cyad.jacobian(residual, x, y=y, out=jac, engine=inner)
        return np.sum(jac * jac) + y @ y

    def f_jax_(x):
        jac = jax.jacfwd(lambda x: jnp.sin(x) * x[0])(x)
        y = jnp.sin(x) * x[0]
        return jnp.sum(jac * jac) + y @ y

    close(cyad.gradient(f, X, engine=outer), reference("two-argument-form", jax.grad(f_jax_), X))


def test_value_and_first_order_results_of_second_order_operators_inside():
    def f(x):
        value, gradient, hessian = cyad.value_gradient_and_hessian(f_np, x)
        first, along = cyad.gradient_and_hvp(f_np, x, V)
        v0, d1, d2 = cyad.value_derivative_and_second_derivative(lambda s: f_np(x + s * V), 0.0)
        return value * np.sum(gradient) + np.sum(hessian) + first @ along + v0 + d1 * d2

    def f_j(x):
        g, h = jax.grad(f_jax)(x), jax.hessian(f_jax)(x)
        line = lambda s: f_jax(x + s * V)  # noqa: E731
        return (f_jax(x) * jnp.sum(g) + jnp.sum(h) + g @ (h @ V) + line(0.0)
                + jax.grad(line)(0.0) * jax.grad(jax.grad(line))(0.0))

    expected = jax.jit(jax.grad(f_j))(X)
    for engine in ENGINES:
        close(cyad.gradient(f, X, engine=engine), expected)


def test_a_c_function_inside_a_differentiation_is_refused_clearly(example):
    f = example.robertson_function()
    u = np.array([1.0, 2e-5, 3e-5])
    for engine in ENGINES:
        with pytest.raises(TypeError, match="C function"):
            cyad.derivative(lambda s: np.sum(cyad.jacobian(f, u * s)), 1.0, engine=engine)

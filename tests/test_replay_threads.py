"""A tape's replay splits large elementwise work and long sums across cyad.set_threads()
threads: every result is, bit for bit, the serial one, and right against NumPy's own
formulas."""
import functools
import math

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import cyad
from cyad._tape.lowering import BLOCKED_BY, default_block
from cyad._tape.replay import PARALLEL_FROM

pytestmark = pytest.mark.xdist_group("test_replay_threads")

# above the split's threshold, of no round size; and long enough for blocked runs
SIZES = [PARALLEL_FROM + 7, BLOCKED_BY * default_block(np.float32) + 4099]


@pytest.fixture
def threads():
    """Set the replay's threads for a test; restored after it."""
    former = cyad.get_threads()
    yield cyad.set_threads
    cyad.set_threads(former)


def elementwise(x):
    return np.sin(x) * np.exp(-x**2) + x**3 / (1.0 + np.cos(x) ** 2) - np.tanh(3.0 * x)


def elementwise_jvp(x, dx):
    c = np.cos(x)
    d = (np.cos(x) * np.exp(-x**2) - 2 * x * np.sin(x) * np.exp(-x**2)
         + (3 * x**2 * (1 + c**2) + x**3 * 2 * c * np.sin(x)) / (1 + c**2) ** 2
         - 3.0 / np.cosh(3.0 * x) ** 2)
    return d * dx


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_gradient(x):
    g = np.zeros_like(x)
    t = x[1:] - x[:-1] ** 2
    g[:-1] = -400.0 * x[:-1] * t - 2.0 * (1.0 - x[:-1])
    g[1:] += 200.0 * t
    return g


def rows(x):
    # many sums at once: sum_inner over rows of 64
    return np.sum(np.sum(np.sin(x).reshape(-1, 64), axis=1) ** 2)


def by_threads(call, counts=(1, 2, 3, 8)):
    """call() on each count of threads: the results, each a copy."""
    former = cyad.get_threads()
    try:
        results = []
        for k in counts:
            cyad.set_threads(k)
            results.append(np.array(call(), copy=True))
        return results
    finally:
        cyad.set_threads(former)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", SIZES)
def test_an_elementwise_jvp_is_the_serial_one_on_any_threads(n, dtype):
    x = np.random.default_rng(n).uniform(-1.0, 1.0, n).astype(dtype)
    dx = np.random.default_rng(1).uniform(-1.0, 1.0, n).astype(dtype)
    prep = cyad.prepare_value_and_pushforward(elementwise, x, dx, engine="tape")
    values = by_threads(lambda: cyad.value_and_pushforward(elementwise, x, dx, prep=prep)[0])
    tangents = by_threads(lambda: cyad.pushforward(elementwise, x, dx, prep=prep))
    for v, t in zip(values[1:], tangents[1:]):
        assert_array_equal(v, values[0])
        assert_array_equal(t, tangents[0])
    rtol = 1e-12 if dtype == np.float64 else 2e-4
    x64, dx64 = x.astype(np.float64), dx.astype(np.float64)
    assert_allclose(values[0], elementwise(x64), rtol=rtol, atol=rtol)
    assert_allclose(tangents[0], elementwise_jvp(x64, dx64), rtol=rtol, atol=10 * rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", SIZES)
def test_a_long_sum_and_its_gradient_are_the_serial_ones_on_any_threads(n, dtype):
    x = np.random.default_rng(n).uniform(-1.2, 1.2, n).astype(dtype)
    prep = cyad.prepare_gradient(rosenbrock, x, engine="tape")
    values = by_threads(lambda: cyad.value_and_gradient(rosenbrock, x, prep=prep)[0])
    gradients = by_threads(lambda: cyad.gradient(rosenbrock, x, prep=prep))
    for v, g in zip(values[1:], gradients[1:]):
        assert_array_equal(v, values[0])
        assert_array_equal(g, gradients[0])
    x64 = x.astype(np.float64)
    terms = 100.0 * (x64[1:] - x64[:-1] ** 2) ** 2 + (1.0 - x64[:-1]) ** 2
    rtol = 1e-12 if dtype == np.float64 else 1e-4
    assert_allclose(values[0], math.fsum(terms), rtol=rtol)
    assert_allclose(gradients[0], rosenbrock_gradient(x64), rtol=rtol, atol=rtol * 100)


def test_many_sums_split_by_rows_are_the_serial_ones():
    x = np.random.default_rng(2).uniform(-1.0, 1.0, 64 * 2048)
    prep = cyad.prepare_gradient(rows, x, engine="tape")
    gradients = by_threads(lambda: cyad.gradient(rows, x, prep=prep))
    for g in gradients[1:]:
        assert_array_equal(g, gradients[0])
    sums = np.sum(np.sin(x).reshape(-1, 64), axis=1)
    assert_allclose(gradients[0], (2 * sums[:, None] * np.cos(x).reshape(-1, 64)).ravel(),
                    rtol=1e-12, atol=1e-12)


def test_a_large_hvp_is_the_serial_one_on_any_threads():
    n = PARALLEL_FROM + 1
    x = np.random.default_rng(3).uniform(-1.0, 1.0, n)
    v = np.random.default_rng(4).uniform(-1.0, 1.0, n)
    prep = cyad.prepare_hvp(rosenbrock, x, v, engine="tape")
    products = by_threads(lambda: cyad.hvp(rosenbrock, x, v, prep=prep))
    for p in products[1:]:
        assert_array_equal(p, products[0])
    # the Hessian of Rosenbrock's function: tridiagonal
    t = x[1:] - x[:-1] ** 2
    diagonal = np.zeros(n)
    diagonal[:-1] = 1200.0 * x[:-1] ** 2 - 400.0 * x[1:] + 2.0
    diagonal[1:] += 200.0
    off = -400.0 * x[:-1]
    expected = diagonal * v
    expected[:-1] += off * v[1:]
    expected[1:] += off * v[:-1]
    assert np.all(np.isfinite(t))
    assert_allclose(products[0], expected, rtol=1e-11, atol=1e-9)


def test_set_threads(threads):
    assert threads(3) >= 1
    assert cyad.get_threads() == 3
    assert threads(None) == 3
    assert cyad.get_threads() >= 1
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="positive int"):
            cyad.set_threads(bad)


def selecting(x):
    # comparisons, selections, clips, a broadcast row and a scalar: elementwise kinds
    # beside the arithmetic, over more elements than the split's threshold
    y = np.where(x > 0.2, np.sqrt(np.abs(x)) * x, np.expm1(x) - 0.5 * x**2)
    z = np.maximum(y, -0.3) + np.minimum(np.cos(x), 0.5) * x.reshape(-1, 4)[:, :1].repeat(
        4, axis=1).ravel()
    return np.sum(np.clip(z, -1.0, 1.0) ** 2) + np.sum(np.tanh(x) * 1.5)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_selections_and_broadcasts_are_the_serial_ones(dtype):
    n = 4 * (PARALLEL_FROM + 3)
    x = np.random.default_rng(5).uniform(-1.0, 1.0, n).astype(dtype)
    v = np.random.default_rng(6).uniform(-1.0, 1.0, n).astype(dtype)
    grad = cyad.prepare_gradient(selecting, x, engine="tape")
    hvp = cyad.prepare_hvp(selecting, x, v, engine="tape")
    gradients = by_threads(lambda: cyad.gradient(selecting, x, prep=grad))
    products = by_threads(lambda: cyad.hvp(selecting, x, v, prep=hvp))
    for g, p in zip(gradients[1:], products[1:]):
        assert_array_equal(g, gradients[0])
        assert_array_equal(p, products[0])
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    x64, v64 = jnp.asarray(x, jnp.float64), jnp.asarray(v, jnp.float64)
    gradient, expected = jax_selecting_references()(x64, v64)
    rtol = 1e-10 if dtype == np.float64 else 2e-3
    assert_allclose(gradients[0], gradient, rtol=rtol, atol=rtol)
    assert_allclose(products[0], expected, rtol=rtol, atol=rtol * 10)


@functools.cache
def jax_selecting_references():
    """JAX's gradient and Hessian-vector product of `selecting` at (x, v), as one compiled
    function (shared by the dtypes' tests)."""
    import jax
    import jax.numpy as jnp

    def jax_selecting(x):
        y = jnp.where(x > 0.2, jnp.sqrt(jnp.abs(x)) * x, jnp.expm1(x) - 0.5 * x**2)
        z = jnp.maximum(y, -0.3) + jnp.minimum(jnp.cos(x), 0.5) * jnp.repeat(
            x.reshape(-1, 4)[:, :1], 4, axis=1).ravel()
        return jnp.sum(jnp.clip(z, -1.0, 1.0) ** 2) + jnp.sum(jnp.tanh(x) * 1.5)

    def references(x, v):
        return jax.grad(jax_selecting)(x), jax.jvp(jax.grad(jax_selecting), (x,), (v,))[1]
    return jax.jit(references)


def test_fused_runs_with_out_aliasing_their_input():
    # out= x itself: the fused runs read x's copy, not the results they write
    n = SIZES[0]
    x = np.random.default_rng(5).uniform(-1.2, 1.2, n)
    v = np.random.default_rng(6).uniform(-1.0, 1.0, n)
    gradient, jvp = rosenbrock_gradient(x), elementwise_jvp(x, v)
    prep = cyad.prepare_gradient(rosenbrock, x)
    out = x.copy()
    assert cyad.gradient(rosenbrock, out, prep=prep, out=out) is out
    assert_allclose(out, gradient, rtol=1e-12, atol=1e-10)
    prep = cyad.prepare_pushforward(elementwise, x, v)
    out = x.copy()
    cyad.pushforward(elementwise, out, v, prep=prep, out=out)
    assert_allclose(out, jvp, rtol=1e-12, atol=1e-12)
    tangent = v.copy()
    cyad.pushforward(elementwise, x, tangent, prep=prep, out=tangent)
    assert_allclose(tangent, jvp, rtol=1e-12, atol=1e-12)

"""The shape functions, the piecewise elementwise functions and sinc where they need more
than the scenarios of tests/test_primitives.py: at their kinks and jumps, with their
options and their errors, on every engine (JAX the reference).
"""
import math
import warnings

import numpy as np
import pytest
from scenarios import ENGINES

import cyad

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)


def _both_orders(f, x, engine):
    return (cyad.gradient(f, x, engine=engine), cyad.hessian(f, x, engine=engine))


def _compiled(f):
    """f as one compiled computation (JAX compiles each primitive of an eager call on its
    own), or f itself for a program whose shapes depend on its values."""
    def call(*args):
        try:
            return jax.jit(f)(*args)
        except jax.errors.ConcretizationTypeError:
            return f(*args)
    return call


def _jax_orders(f, x):
    gradient, hessian = _compiled(lambda t: (jax.grad(f)(t), jax.hessian(f)(t)))(jnp.asarray(x))
    return np.asarray(gradient), np.asarray(hessian)


def _check_against_jax(program, x, engine, rtol=1e-12):
    got = _both_orders(lambda t: program(np, t), x, engine)
    expected = _jax_orders(lambda t: program(jnp, t), x)
    for g, e, what in zip(got, expected, ("gradient", "hessian"), strict=True):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=1e-12, err_msg=what)


# -- sinc: exact at 0 to second order --------------------------------------------------------

def _sinc_series_derivatives(x):
    """sinc' and sinc'' by the derivatives of its Maclaurin series (|pi x| << 1)."""
    u = np.pi * x
    first = sum((-1) ** k * 2 * k * u ** (2 * k - 1) / math.factorial(2 * k + 1)
                for k in range(1, 8))
    second = sum((-1) ** k * 2 * k * (2 * k - 1) * u ** (2 * k - 2) / math.factorial(2 * k + 1)
                 for k in range(1, 8))
    return np.pi * first, np.pi ** 2 * second


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sinc_at_and_near_zero(engine, dtype):
    # JAX's sinc loses digits near 0 (its derivative at 1e-9 is 0): the series there
    near = np.array([0.0, 1e-9, -1e-4, 3e-3], dtype)
    far = np.array([0.1, 0.159, 0.16, -0.5, 1.0, 2.5], dtype)
    rtol = 1e-13 if dtype == np.float64 else 1e-5
    jax_first, jax_second = _jax_orders(lambda s: jnp.sum(jnp.sinc(s)), far)
    for x, expected in ((near, _sinc_series_derivatives(near.astype(np.float64))),
                        (far, (jax_first, np.diag(jax_second)))):
        first, second = _both_orders(lambda t: np.sum(np.sinc(t)), x, engine)
        np.testing.assert_allclose(first, expected[0], rtol=rtol, atol=1e-300)
        np.testing.assert_allclose(second, np.diag(expected[1]), rtol=rtol, atol=1e-300)
    # the limits at 0, analytically
    first, second = _both_orders(lambda t: np.sum(np.sinc(t)), near[:1], engine)
    assert first[0] == 0.0
    np.testing.assert_allclose(second[0, 0], -np.pi ** 2 / 3, rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sinc_nested_at_zero(dtype):
    # d/ds of d/dt sinc(s + t) at 0: the second derivative, inside a derivative
    got = cyad.derivative(lambda s: cyad.derivative(lambda t: np.sinc(s + t), dtype(0.0)),
                          dtype(0.0))
    np.testing.assert_allclose(got, -np.pi ** 2 / 3, rtol=1e-6)


def test_sinc_values_are_numpys():
    x = np.array([0.0, 1e-12, 0.05, 0.16, 0.3, 1.0, -2.5, 1e10])
    value, _ = cyad.value_and_jacobian(np.sinc, x)
    np.testing.assert_allclose(value, np.sinc(x), rtol=1e-15, atol=1e-300)


# -- //, %, fmod, copysign and heaviside at their jumps and kinks ---------------------------

QUOTIENT_POINTS = np.array([[2.5, 1.0], [-2.5, 1.0], [2.5, -1.0], [-2.5, -0.7], [2.0, 1.0],
                            [-3.0, 1.5], [0.0, 1.3], [1.7, 0.4]])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["floor_divide", "remainder", "mod", "fmod"])
def test_quotient_steps_against_jax(name, engine):
    # negative operands and exact multiples (a jump: the side NumPy's value takes)
    for point in QUOTIENT_POINTS:
        _check_against_jax(lambda xp, t: getattr(xp, name)(t[0], t[1]) * (1.0 + t[0]),
                           point, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_operators_floor_divide_and_mod(engine):
    x = np.array([0.25, 0.7, -1.3, 2.05])

    def f(xp, t):
        q, r = divmod(t, 0.3)
        return xp.sum((t // 0.3) * t + (t % 0.3) ** 2 + (1.7 % t) * q + r * (2.0 // t))

    _check_against_jax(f, x, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_in_place_floor_divide_and_mod(engine):
    def f(t):
        y = t * 1.0
        y %= 0.3
        z = t * 2.0
        z //= 0.7
        return np.sum(y * y + z * t)

    x = np.array([0.25, 0.7, -1.3, 2.05])
    expected = _jax_orders(lambda t: jnp.sum(jnp.remainder(t, 0.3) ** 2
                                             + jnp.floor_divide(t * 2.0, 0.7) * t), x)
    for got, e in zip(_both_orders(f, x, engine), expected, strict=True):
        np.testing.assert_allclose(got, e, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_copysign_at_zero_takes_abs_convention(engine):
    x = np.array([0.0, -1.5, 2.0])
    grad = cyad.gradient(lambda t: np.sum(np.copysign(t, np.array([1.0, 1.0, -1.0]))), x,
                         engine=engine)
    np.testing.assert_array_equal(grad, [0.0, -1.0, -1.0])
    grad_b = cyad.gradient(lambda t: np.sum(np.copysign(2.0, t)), x, engine=engine)
    np.testing.assert_array_equal(grad_b, [0.0, 0.0, 0.0])
    _check_against_jax(lambda xp, t: xp.sum(xp.copysign(t ** 3, t[::-1] - 0.5)), x, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_heaviside_is_h0_at_zero(engine):
    x = np.array([-1.0, 0.0, 2.0])
    # in h0: 1 where x == 0; in x: 0 everywhere, at 0 too
    grad_h0 = cyad.gradient(lambda h: np.sum(np.heaviside(x, h)), np.array([0.3, 0.5, 0.7]),
                            engine=engine)
    np.testing.assert_array_equal(grad_h0, [0.0, 1.0, 0.0])
    grad_x = cyad.gradient(lambda t: np.sum(np.heaviside(t, 0.5) * t), x, engine=engine)
    np.testing.assert_array_equal(grad_x, np.heaviside(x, 0.5))
    _check_against_jax(lambda xp, t: xp.sum(xp.heaviside(t - 1.0, t ** 2) * t), x, engine)


# -- take, pad and the other shape functions: options and errors ---------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_take_refuses_what_numpy_refuses(engine):
    x = np.arange(1.0, 5.0)
    with pytest.raises(IndexError, match="out of bounds"):
        cyad.gradient(lambda t: np.sum(np.take(t, [0, 4])), x, engine=engine)
    with pytest.raises(IndexError, match="integer type"):
        cyad.gradient(lambda t: np.sum(np.take(t, np.array([0.0]))), x, engine=engine)
    with pytest.raises(ValueError, match="clipmode"):
        cyad.gradient(lambda t: np.sum(np.take(t, [0], mode="nearest")), x, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("mode", ["mean", "linear_ramp", "maximum", "median", "minimum", "empty"])
def test_pad_modes_that_compute_are_refused(mode, engine):
    with pytest.raises(TypeError, match=f"numpy.pad with mode='{mode}' is not supported"):
        cyad.gradient(lambda t: np.sum(np.pad(t, 2, mode=mode)), np.arange(1.0, 4.0),
                      engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_pad_odd_reflection_is_refused(engine):
    with pytest.raises(TypeError, match="reflect_type='odd' is not supported"):
        cyad.gradient(lambda t: np.sum(np.pad(t, 2, "reflect", reflect_type="odd")),
                      np.arange(1.0, 4.0), engine=engine)
    # NumPy's own check of another mode's options
    with pytest.raises(ValueError, match="unsupported keyword arguments"):
        cyad.gradient(lambda t: np.sum(np.pad(t, 2, stat_length=1)), np.arange(1.0, 4.0),
                      engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_pad_constant_values_are_not_differentiated(engine):
    with pytest.raises(TypeError, match="constant_values is not differentiated"):
        cyad.gradient(lambda t: np.sum(np.pad(t, 1, constant_values=t[0])), np.ones(3),
                      engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_partition_at_ties_gives_each_element_its_own_derivative(engine):
    x = np.array([3.0, 1.0, 2.0, 1.0, 5.0])
    w = np.array([1.0, 10.0, 100.0, 1000.0, 10000.0])
    grad = cyad.gradient(lambda t: np.sum(w * np.partition(t, 2)), x, engine=engine)
    # the weights, each on the element np.argpartition puts at that place
    order = np.argpartition(x, 2)
    expected = np.zeros(5)
    expected[order] = w
    np.testing.assert_array_equal(grad, expected)


@pytest.mark.parametrize("engine", ENGINES)
def test_piecewise_of_one_condition_and_constants(engine):
    x = np.array([-1.0, 0.5, 2.0])

    def f(xp, t):
        # one condition, not in a list (JAX's takes a list)
        condition = t < 1.0 if xp is np else [t < 1.0]
        return xp.sum(xp.piecewise(t, condition, [lambda s: s ** 3, 2.0]) * t)

    _check_against_jax(f, x, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_nan_to_num_in_place(engine):
    def f(t):
        y = np.where(t > 1.0, np.inf, t * t)
        z = np.nan_to_num(y, copy=False, posinf=5.0)
        assert z is y
        return np.sum(y * t)

    x = np.array([0.5, 2.0, -1.0])
    np.testing.assert_array_equal(cyad.gradient(f, x, engine=engine), [0.75, 5.0, 3.0])


@pytest.mark.parametrize("engine", ENGINES)
def test_methods_diagonal_take_repeat(engine):
    x = np.arange(1.0, 13.0) / 7.0

    def f(xp, t):
        a = t.reshape(3, 4)
        return (xp.sum(a.diagonal(1) ** 2) + xp.sum(a.take(xp.array([0, 3]), axis=1) ** 3)
                + xp.sum(t[:3].repeat(2) * t[:6]))

    _check_against_jax(f, x, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_astype(engine):
    x = np.array([0.7, 2.2, -1.6])

    def f(t):
        index = (t * 0.9).astype(np.intp) + 1          # read off the values: a constant
        mask = t.astype(bool)
        return np.sum(t.astype(np.float64) ** 2 * index) + np.sum(t[index] * mask[index])

    # the float conversions keep the derivative, the integer and bool ones are constants
    index = (x * 0.9).astype(np.intp) + 1
    expected = 2 * x * index
    np.add.at(expected, index, 1.0)
    np.testing.assert_allclose(cyad.gradient(f, x, engine=engine), expected, rtol=1e-15)


def test_astype_to_float32_on_the_dual_engine():
    value, grad = cyad.value_and_gradient(lambda t: np.sum(t.astype(np.float32) ** 2),
                                          np.array([0.5, 1.5]))
    np.testing.assert_allclose(grad, [1.0, 3.0])
    with pytest.raises(TypeError, match="float64 or float32, not float16"):
        cyad.gradient(lambda t: np.sum(t.astype(np.float16)), np.ones(2))


@pytest.mark.parametrize("engine", ENGINES)
def test_row_stack(engine):
    # NumPy's deprecated alias of vstack, which passes dtype= and casting= on
    x = np.array([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        grad = cyad.gradient(lambda t: np.sum(np.row_stack([t, t ** 2]) * 3.0), x,
                             engine=engine)
    np.testing.assert_array_equal(grad, 3.0 + 6.0 * x)
    with pytest.raises(TypeError, match="dtype= is not supported"):
        cyad.gradient(lambda t: np.sum(np.vstack([t, t], dtype=np.float32)), x, engine=engine)


SPELLINGS = {
    "insert-slice": lambda xp, x: xp.insert(x, slice(1, 5, 2), 9.0),
    "insert-columns": lambda xp, x: xp.insert(x.reshape(3, 4), xp.array([0, 2]),
                                              x[:3].reshape(3, 1) ** 2, axis=1),
    "delete-slice": lambda xp, x: xp.delete(x.reshape(3, 4), slice(0, 4, 2), axis=1),
    "array-split-bounds": lambda xp, x: xp.concatenate(xp.array_split(x ** 2, [2, 5, 9])),
    "block-of-numbers": lambda xp, x: xp.block([[x[0], x[1]], [x[2] ** 2, 1.0]]),
    "repeat-rows": lambda xp, x: xp.repeat(x.reshape(3, 4), xp.array([2, 0, 1]), axis=0),
    "pad-wide-wrap": lambda xp, x: xp.pad(x[:3] ** 2, (7, 8), mode="wrap"),
    "pad-wide-reflect": lambda xp, x: xp.pad(x[:3] ** 2, (7, 8), mode="reflect"),
    "pad-symmetric-2d": lambda xp, x: xp.pad(x.reshape(3, 4), ((4, 1), (5, 6)),
                                             mode="symmetric"),
    "pad-constant-pairs": lambda xp, x: xp.pad(x.reshape(3, 4) ** 2, 1,
                                               constant_values=((1.0, 2.0), (3.0, 4.0))),
    "take-clip": lambda xp, x: xp.take(x.reshape(3, 4), xp.array([[-5, 1], [9, 2]]), axis=1,
                                       mode="clip"),
    "roll-axes": lambda xp, x: xp.roll(x.reshape(2, 3, 2) ** 2, (-1, 4), axis=(2, 1)),
    "divmod": lambda xp, x: xp.stack(divmod(x * x, -0.7)),
    "interp-sorted-xp": lambda xp, x: xp.interp(0.3, xp.sort(x), x ** 2),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", SPELLINGS)
def test_more_spellings_against_jax(name, engine):
    program = SPELLINGS[name]
    x = np.linspace(-1.3, 2.1, 12)
    value, jacobian = cyad.value_and_jacobian(lambda t: program(np, t), x, engine=engine)
    np.testing.assert_allclose(value, program(np, x), rtol=1e-15)
    np.testing.assert_allclose(jacobian,
                               _compiled(jax.jacfwd(lambda t: program(jnp, t)))(jnp.asarray(x)),
                               rtol=1e-13, atol=1e-13)
    w = np.cos(np.arange(np.size(value))).reshape(np.shape(value))
    _check_against_jax(lambda xp, t: xp.sum(program(xp, t) * w), x, engine)

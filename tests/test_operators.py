"""The first-order operators against analytic answers, in one- and two-argument form."""
import numpy as np
import pytest

import cyad
from rosenbrock import rosenbrock, rosenbrock_gradient

N = 19  # leaves a remainder chunk for every chunk width tested
CHUNKS = [1, 2, 3, 8, 16, 17, N]  # N is vector mode


def elementwise(x):
    return np.sin(x) * x**2 + 3.0


def elementwise_jacobian(x):
    return np.diag(np.cos(x) * x**2 + 2 * x * np.sin(x))


def neighbours(x):
    # y_i = x_i * x_{i+1}: a banded Jacobian
    return x[1:] * x[:-1]


def neighbours_jacobian(x):
    n = x.size
    jac = np.zeros((n - 1, n))
    jac[np.arange(n - 1), np.arange(n - 1)] = x[1:]
    jac[np.arange(n - 1), np.arange(1, n)] = x[:-1]
    return jac


def in_place(f):
    """The two-argument form of f."""
    def f2(y, x):
        y[...] = f(x)
    return f2


def point(n=N, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(0.2, 1.5, n).astype(dtype)


JACOBIAN_CASES = [(elementwise, elementwise_jacobian), (neighbours, neighbours_jacobian)]


# -- jacobian -------------------------------------------------------------------------

@pytest.mark.parametrize("chunk", CHUNKS)
@pytest.mark.parametrize("f, jac", JACOBIAN_CASES)
def test_jacobian(f, jac, chunk):
    x = point()
    np.testing.assert_allclose(cyad.jacobian(f, x, chunk=chunk), jac(x), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("chunk", [3, N])
@pytest.mark.parametrize("f, jac", JACOBIAN_CASES)
def test_jacobian_two_argument(f, jac, chunk):
    x = point()
    y = np.zeros(f(x).shape)
    np.testing.assert_allclose(cyad.jacobian(in_place(f), x, y=y, chunk=chunk), jac(x),
                               rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(y, f(x), rtol=1e-15)


def test_value_and_jacobian():
    x = point()
    value, jac = cyad.value_and_jacobian(neighbours, x, chunk=4)
    np.testing.assert_allclose(value, neighbours(x), rtol=1e-15)
    np.testing.assert_allclose(jac, neighbours_jacobian(x), rtol=1e-15)


def test_jacobian_of_matrix_input_and_output():
    x = point(12).reshape(3, 4)
    jac = cyad.jacobian(lambda x: x**3, x, chunk=5)
    assert jac.shape == (3, 4, 3, 4)
    expected = np.diag((3 * x**2).ravel()).reshape(3, 4, 3, 4)
    np.testing.assert_allclose(jac, expected, rtol=1e-14)


def test_jacobian_float32_keeps_dtype():
    x = point(dtype=np.float32)
    jac = cyad.jacobian(elementwise, x, chunk=4)
    assert jac.dtype == np.float32
    np.testing.assert_allclose(jac, elementwise_jacobian(x.astype(np.float64)),
                               rtol=2e-6, atol=1e-6)


# -- gradient ---------------------------------------------------------------------------

@pytest.mark.parametrize("chunk", CHUNKS)
def test_gradient(chunk):
    x = point()
    np.testing.assert_allclose(cyad.gradient(rosenbrock, x, chunk=chunk), rosenbrock_gradient(x),
                               rtol=1e-13)


def test_value_and_gradient_two_argument():
    x = point()
    y = np.zeros(())

    def f(y, x):
        y[...] = rosenbrock(x)

    value, grad = cyad.value_and_gradient(f, x, y=y, chunk=5)
    assert value == pytest.approx(rosenbrock(x), rel=1e-15)
    np.testing.assert_allclose(grad, rosenbrock_gradient(x), rtol=1e-13)


def test_value_and_gradient_returns_a_float():
    value, grad = cyad.value_and_gradient(rosenbrock, point())
    assert type(value) is float
    assert grad.shape == (N,)


def test_gradient_needs_a_scalar_valued_function():
    with pytest.raises(ValueError, match="scalar-valued"):
        cyad.gradient(elementwise, point())


# -- pushforward -----------------------------------------------------------------------

@pytest.mark.parametrize("f, jac", JACOBIAN_CASES)
def test_pushforward(f, jac):
    x, dx = point(), point(seed=1) - 0.8
    np.testing.assert_allclose(cyad.pushforward(f, x, dx), jac(x) @ dx, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("chunk", [None, 1, 2, 3])
def test_pushforward_batch(chunk):
    x = point()
    tangents = tuple(point(seed=s) - 0.8 for s in range(1, 6))
    result = cyad.pushforward(neighbours, x, tangents, chunk=chunk)
    assert isinstance(result, tuple) and len(result) == 5
    for r, t in zip(result, tangents):
        np.testing.assert_allclose(r, neighbours_jacobian(x) @ t, rtol=1e-13, atol=1e-14)


def test_pushforward_batch_runs_in_one_evaluation_when_it_fits():
    calls = []

    def f(x):
        calls.append(1)
        return x * x

    tangents = tuple(np.eye(N)[:4])
    prep = cyad.prepare_pushforward(f, point(), tangents)
    cyad.pushforward(f, point(), tangents, prep=prep)
    assert prep.evaluations == 1
    assert len(calls) == 1


def test_value_and_pushforward_two_argument():
    x, dx = point(), point(seed=1)
    y = np.full(N - 1, 7.0)
    value, tangent = cyad.value_and_pushforward(in_place(neighbours), x, dx, y=y)
    assert value is y
    np.testing.assert_allclose(y, neighbours(x), rtol=1e-15)
    np.testing.assert_allclose(tangent, neighbours_jacobian(x) @ dx, rtol=1e-13)


def test_pushforward_of_scalar_input():
    assert cyad.pushforward(lambda x: x**3, 2.0, 0.5) == pytest.approx(3 * 4.0 * 0.5)


# -- derivative -------------------------------------------------------------------------

def test_derivative_scalar():
    d = cyad.derivative(lambda x: np.sin(x) * x, 0.7)
    assert type(d) is float
    assert d == pytest.approx(np.cos(0.7) * 0.7 + np.sin(0.7), rel=1e-15)


def test_derivative_vector_valued():
    c = np.array([1.0, -2.0, 3.0])
    value, d = cyad.value_and_derivative(lambda t: np.exp(c * t), 0.3)
    np.testing.assert_allclose(value, np.exp(c * 0.3), rtol=1e-15)
    np.testing.assert_allclose(d, c * np.exp(c * 0.3), rtol=1e-15)


def test_derivative_two_argument():
    y = np.zeros(2)

    def f(y, t):
        y[0] = t**2
        y[1] = np.cos(t)

    np.testing.assert_allclose(cyad.derivative(f, 1.5, y=y), [3.0, -np.sin(1.5)], rtol=1e-15)
    np.testing.assert_allclose(y, [2.25, np.cos(1.5)], rtol=1e-15)


def test_derivative_needs_a_scalar():
    with pytest.raises(ValueError, match="scalar x"):
        cyad.derivative(np.sin, np.ones(3))


# -- the two-argument form ----------------------------------------------------------------

def test_dual_y_starts_from_the_current_values_of_y():
    y = np.array([10.0, 20.0, 30.0])
    x = np.array([1.0, 2.0, 3.0])

    def accumulate(y, x):
        y += x**2

    value, jac = cyad.value_and_jacobian(accumulate, x, y=y)
    np.testing.assert_allclose(value, [11.0, 24.0, 39.0])
    np.testing.assert_allclose(jac, np.diag(2 * x))


def test_y_is_not_touched_when_f_fails():
    y = np.array([1.0, 2.0])

    def f(y, x):
        y[...] = x
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        cyad.jacobian(f, np.array([5.0, 6.0]), y=y)
    np.testing.assert_array_equal(y, [1.0, 2.0])


# -- preps -------------------------------------------------------------------------------

def test_prep_reused_at_another_point():
    prep = cyad.prepare_jacobian(neighbours, point(seed=3), chunk=4)
    for seed in (4, 5):
        x = point(seed=seed)
        np.testing.assert_allclose(cyad.jacobian(neighbours, x, prep=prep),
                                   neighbours_jacobian(x), rtol=1e-15)


def test_prep_serves_its_whole_family():
    x = point()
    prep = cyad.prepare_gradient(rosenbrock, x)
    value, grad = cyad.value_and_gradient(rosenbrock, x, prep=prep)
    np.testing.assert_allclose(cyad.gradient(rosenbrock, x, prep=prep), grad)


@pytest.mark.parametrize("x, message", [
    (np.ones(N + 1), r"shape \(20,\).*shape \(19,\)"),
    (np.ones(N, dtype=np.float32), "dtype float32"),
])
def test_prep_rejects_other_inputs(x, message):
    prep = cyad.prepare_jacobian(elementwise, point())
    with pytest.raises(ValueError, match=message):
        cyad.jacobian(elementwise, x, prep=prep)
    # and still works afterwards
    np.testing.assert_allclose(cyad.jacobian(elementwise, point(), prep=prep),
                               elementwise_jacobian(point()), rtol=1e-13, atol=1e-14)


def test_prep_rejects_another_operator():
    prep = cyad.prepare_jacobian(elementwise, point())
    with pytest.raises(ValueError, match="made for jacobian, not pushforward"):
        cyad.pushforward(elementwise, point(), point(), prep=prep)
    with pytest.raises(TypeError, match="prepare_"):
        cyad.jacobian(elementwise, point(), prep="not a prep")


def test_prep_rejects_another_function_form():
    y = np.zeros(N)
    prep = cyad.prepare_jacobian(in_place(elementwise), point(), y=y)
    with pytest.raises(ValueError, match=r"f\(y, x\)"):
        cyad.jacobian(elementwise, point(), prep=prep)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        cyad.jacobian(in_place(elementwise), point(), y=np.zeros(3), prep=prep)
    prep = cyad.prepare_jacobian(elementwise, point())
    with pytest.raises(ValueError, match=r"f\(x\) without y="):
        cyad.jacobian(in_place(elementwise), point(), y=y, prep=prep)


def test_prep_rejects_another_number_of_tangents():
    prep = cyad.prepare_pushforward(elementwise, point(), (point(), point()))
    with pytest.raises(ValueError, match="1 tangent"):
        cyad.pushforward(elementwise, point(), point(), prep=prep)


def test_prep_rejects_a_function_whose_output_changed_shape():
    prep = cyad.prepare_jacobian(elementwise, point())
    cyad.jacobian(elementwise, point(), prep=prep)
    with pytest.raises(ValueError, match="f returned shape"):
        cyad.jacobian(neighbours, point(), prep=prep)


def test_prep_records_its_chunking():
    # (the dual engine pads a chunk to a width of lanes; the tape's lanes are the chunk)
    prep = cyad.prepare_jacobian(elementwise, point(), chunk=3, engine="dual")
    assert (prep.chunk, prep.width, prep.evaluations) == (3, 4, 7)
    prep = cyad.prepare_jacobian(elementwise, point(), chunk=17, engine="dual")
    assert (prep.chunk, prep.width, prep.evaluations) == (17, 24, 2)
    prep = cyad.prepare_jacobian(elementwise, point(), chunk=3)
    assert (prep.engine, prep.chunk, prep.width) == ("tape", 3, 3)
    with pytest.raises(ValueError, match="chunk"):
        cyad.prepare_jacobian(elementwise, point(), chunk=0)


# -- out= --------------------------------------------------------------------------------

def test_out_is_written_and_returned():
    x = point()
    out = np.zeros((N - 1, N))
    assert cyad.jacobian(neighbours, x, out=out) is out
    np.testing.assert_allclose(out, neighbours_jacobian(x), rtol=1e-15)
    pair = (np.zeros(N - 1), np.zeros((N - 1, N)))
    assert cyad.value_and_jacobian(neighbours, x, out=pair) is pair
    np.testing.assert_allclose(pair[0], neighbours(x), rtol=1e-15)


def test_out_for_a_batch_of_tangents():
    x = point()
    tangents = (point(seed=1), point(seed=2))
    out = (np.zeros(N - 1), np.zeros(N - 1))
    assert cyad.pushforward(neighbours, x, tangents, out=out) is out
    np.testing.assert_allclose(out[1], neighbours_jacobian(x) @ tangents[1], rtol=1e-14)


@pytest.mark.parametrize("out, error, message", [
    (np.zeros((N, N)), ValueError, r"shape \(18, 19\)"),
    (np.zeros((N - 1, N), dtype=np.float32), ValueError, "dtype float64"),
    (np.zeros((N, N - 1)).T, ValueError, "C-contiguous"),
    ([[0.0] * N] * (N - 1), TypeError, "NumPy array"),
])
def test_bad_out(out, error, message):
    with pytest.raises(error, match=message):
        cyad.jacobian(neighbours, point(), out=out)


def test_value_and_out_must_be_a_pair():
    with pytest.raises(TypeError, match="pair"):
        cyad.value_and_jacobian(neighbours, point(), out=np.zeros((N - 1, N)))


# -- inputs -------------------------------------------------------------------------------

def test_integer_and_bool_inputs_become_float64():
    jac = cyad.jacobian(lambda x: x * x, np.array([1, 2, 3]))
    assert jac.dtype == np.float64
    np.testing.assert_array_equal(jac, np.diag([2.0, 4.0, 6.0]))
    assert cyad.jacobian(lambda x: 2 * x, np.array([True, False])).dtype == np.float64


def test_a_jacobian_of_complex_values_of_complex_x_needs_holomorphic():
    # (as jax.jacfwd's; tests/test_complex_operators.py holds the complex calls)
    with pytest.raises(TypeError, match="holomorphic=True"):
        cyad.jacobian(lambda x: x, np.ones(3, dtype=complex))
    np.testing.assert_array_equal(
        cyad.jacobian(lambda x: x, np.ones(3, dtype=complex), holomorphic=True), np.eye(3))


def test_list_input():
    np.testing.assert_allclose(cyad.jacobian(lambda x: x * x, [1.0, 2.0]), np.diag([2.0, 4.0]))


# -- what f may return ---------------------------------------------------------------------

@pytest.mark.parametrize("constant", [3.0, 2, np.arange(4.0)])
def test_constant_output_has_zero_derivative(constant):
    x = point(4)
    value, jac = cyad.value_and_jacobian(lambda x: constant, x)
    np.testing.assert_array_equal(value, constant)
    assert jac.shape == np.shape(constant) + (4,)
    assert not jac.any()


@pytest.mark.parametrize("result", [{"a": 1.0}, "x", None], ids=["dict", "str", "None"])
@pytest.mark.parametrize("engine", ["dual", "tape"])
def test_f_returning_something_else_is_an_error(result, engine):
    # (a list or tuple is stacked: tests/test_list_results.py)
    with pytest.raises(TypeError, match="must return"):
        cyad.jacobian(lambda x: result, point(), engine=engine)


def test_exception_in_f_propagates_unchanged_and_prep_still_works():
    error = KeyError("from f")
    fail = [True]

    def f(x):
        if fail[0]:
            raise error
        return x * 2.0

    x = point(5)
    prep = cyad.prepare_jacobian(f, x, chunk=2)
    with pytest.raises(KeyError) as info:
        cyad.jacobian(f, x, prep=prep)
    assert info.value is error
    fail[0] = False
    np.testing.assert_array_equal(cyad.jacobian(f, x, prep=prep), 2.0 * np.eye(5))


def test_f_may_change_its_input_in_place():
    def f(x):
        x *= 2.0
        return x * x

    x = point(5)
    np.testing.assert_allclose(cyad.jacobian(f, x, chunk=2), np.diag(8.0 * x), rtol=1e-15)


# -- the default chunk -----------------------------------------------------------------------

def test_default_chunk_is_vector_mode_for_small_inputs():
    assert cyad.default_chunk(100, 100) == 100
    assert cyad.prepare_jacobian(elementwise, point()).evaluations == 1


def test_default_chunk_is_bounded_for_large_inputs():
    chunk = cyad.default_chunk(10_000, 10_000)
    assert chunk % 8 == 0 and 8 <= chunk < 10_000


def test_default_chunk_of_a_c_function_is_narrow():
    assert cyad.default_chunk(100, 100, python=False) == 8
    assert cyad.default_chunk(3, 3, python=False) == 3

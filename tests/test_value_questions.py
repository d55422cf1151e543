"""NumPy's questions about an array, and functions whose values cyad takes from NumPy's, on
cyad's arrays.

The questions (dtypes, shapes, complexity, whether an object is a scalar or iterable)
must get, on every engine and inside first- and second-order differentiations, the answer
NumPy gives for the ndarray of the same values; those NumPy dispatches are the primitive
table's value-only entries, the others (np.isscalar, np.iterable) read the array's own
surface. Then the exact edges of the functions made of others here (np.frexp, np.ldexp,
np.modf, np.i0): NumPy's values at zeros, infinities and subnormals, the derivatives at
the points a composition could get wrong, and a tape replayed where the exponents it read
change.
"""
import numpy as np
import pytest
from scenarios import ENGINES

import cyad

DTYPES = [np.float64, np.float32]
POINT = np.array([0.3, -0.7, 1.2, 0.5, 2.1, -1.4])

QUESTIONS = {
    "iscomplex": np.iscomplex,
    "isreal": np.isreal,
    "iscomplexobj": np.iscomplexobj,
    "isrealobj": np.isrealobj,
    "result_type": lambda a: np.result_type(a, np.float32),
    "result_type-of-numbers": lambda a: np.result_type(a, 1.0, 2),
    "result_type-of-two": lambda a: np.result_type(a, np.zeros(2, np.float64)),
    "can_cast": lambda a: np.can_cast(a, np.float32),
    "can_cast-same-kind": lambda a: np.can_cast(a, np.float16, "same_kind"),
    "min_scalar_type": np.min_scalar_type,
    "shape": np.shape,
    "ndim": np.ndim,
    "size": np.size,
    "isscalar": np.isscalar,
    "iterable": np.iterable,
}

# the arrays f asks about, made of x (the ndarray of the same values: the same made of the
# plain x; a 0-d array is NumPy's x[0, ...], as x[0] of cyad's array is a 0-d array)
ARRAYS = {
    "vector": lambda x: x * 1.0,
    "matrix": lambda x: x.reshape(2, 3),
    "0-d": lambda x: x[0, ...] * 1.0,
    "0-d-large": lambda x: x[0, ...] * 1e6,
    "0-d-huge": lambda x: x[4, ...] * 1e38 * (1e10 if x.dtype == np.float64 else 1.0),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("array", ARRAYS)
@pytest.mark.parametrize("question", QUESTIONS)
def test_questions_are_answered_as_for_the_ndarray(question, array, dtype, engine):
    ask, make = QUESTIONS[question], ARRAYS[array]
    x = POINT.astype(dtype)
    with np.errstate(over="ignore"):
        expected = ask(np.asarray(make(x)))   # (a 0-d ndarray, not a NumPy scalar)
    answers = []

    def f(x):
        with np.errstate(over="ignore"):
            answers.append(ask(make(x)))
        return np.sum(x ** 3)

    np.testing.assert_allclose(cyad.gradient(f, x, engine=engine), 3.0 * x ** 2, rtol=1e-6)
    np.testing.assert_allclose(cyad.hessian(f, x, engine=engine), np.diag(6.0 * x), rtol=1e-6)
    assert answers
    for answer in answers:
        assert type(answer) is type(expected)
        np.testing.assert_array_equal(answer, expected)


def test_iscomplex_and_isreal_of_complex_arrays_read_the_imaginary_parts():
    def f(x):
        z = x[:2] + 1j * x[2:4] * np.array([1.0, 0.0])
        return np.sum(np.where(np.isreal(z), np.abs(z) ** 2, 0.0)
                      + np.where(np.iscomplex(z), np.real(z) ** 3, 0.0))

    x = POINT[:4]
    expected = np.array([3.0 * x[0] ** 2, 2.0 * x[1], 0.0, 0.0])
    for engine in ENGINES:
        np.testing.assert_allclose(cyad.gradient(f, x, engine=engine), expected)


# -- NumPy's values at the edges --------------------------------------------------------------

EDGES = {np.float64: np.array([0.0, -0.0, 5e-324, -3e-310, 1.0, -0.75, 3.0, 1e300, -2.5,
                               np.inf, -np.inf, 7.0]),
         np.float32: np.array([0.0, -0.0, 1e-45, -3e-39, 1.0, -0.75, 3.0, 1e38, -2.5,
                               np.inf, -np.inf, 7.0])}


def _values_on(engine, f, x):
    found = []

    def g(x):
        found.append(f(x))
        return x[4] * 2.0

    cyad.gradient(g, x, engine=engine)
    return found[0]


def _primal(value):
    return value.__cyad_value__() if hasattr(type(value), "__cyad_value__") else \
        getattr(value, "values", value)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
def test_frexp_ldexp_modf_give_numpys_values_bit_for_bit(dtype, engine):
    x = EDGES[dtype].astype(dtype)
    exponents = np.array([3, -2, 1074, 40, -1, 0, -1100, -1000, 5, 2, 1, -3])

    def parts(x):
        return (*np.frexp(x), np.ldexp(x, exponents), *np.modf(x), *np.modf(x * 0.5))

    with np.errstate(over="ignore", under="ignore"):
        expected = parts(x)
        found = _values_on(engine, parts, x)
    for value, reference in zip(found, expected, strict=True):
        value = np.asarray(_primal(value))
        assert value.dtype == reference.dtype
        np.testing.assert_array_equal(value, reference)
        np.testing.assert_array_equal(np.signbit(value), np.signbit(reference))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
def test_frexp_ldexp_modf_derivatives(dtype, engine):
    x = np.array([0.3, -5.0, 1e-30, 6.0, -4.0], dtype)
    mantissa_slope = np.ldexp(np.ones(5, dtype), -np.frexp(x)[1])
    jacobian = cyad.jacobian(lambda x: np.frexp(x)[0], x, engine=engine)
    np.testing.assert_array_equal(jacobian, np.diag(mantissa_slope))
    exponents = np.array([1, -3, 90, 0, -120])
    jacobian = cyad.jacobian(lambda x: np.ldexp(x, exponents), x, engine=engine)
    np.testing.assert_array_equal(jacobian, np.diag(np.ldexp(np.ones(5, dtype), exponents)))
    # the fractional part has slope 1 everywhere, at whole numbers too (JAX's); the whole 0
    jacobian = cyad.jacobian(lambda x: np.concatenate(np.modf(x)), x, engine=engine)
    np.testing.assert_array_equal(jacobian, np.concatenate([np.eye(5), np.zeros((5, 5))]))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
def test_i0_at_zero_and_across_the_series_radius(dtype, engine):
    # I0'(0) = 0, I0''(0) = 1/2 (I0 is even), and I0' = I1 on both sides of |x| = 8
    zero = dtype(0.0)
    assert cyad.derivative(np.i0, zero, engine=engine) == 0.0
    np.testing.assert_allclose(cyad.second_derivative(np.i0, zero, engine=engine), 0.5,
                               rtol=1e-6)
    special = pytest.importorskip("scipy.special")
    x = np.array([-8.5, -8.0, 7.9, 8.0, 8.1, 20.0], dtype)
    gradient = cyad.gradient(lambda x: np.sum(np.i0(x)), x, engine=engine)
    np.testing.assert_allclose(gradient, special.i1(x.astype(np.float64)),
                               rtol=1e-13 if dtype == np.float64 else 1e-5)
    hessian = cyad.hessian(lambda x: np.sum(np.i0(x)), x, engine=engine)
    np.testing.assert_allclose(np.diag(hessian), special.ivp(1, x.astype(np.float64)),
                               rtol=1e-12 if dtype == np.float64 else 1e-5)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
def test_a_tape_replays_frexp_and_min_scalar_type_where_their_values_change(dtype):
    def f(x):
        mantissa, exponent = np.frexp(x)
        size = np.dtype(np.min_scalar_type(x[0] * 1e4)).itemsize
        return np.sum(mantissa ** 2 * exponent) * size

    x = POINT[:4].astype(dtype)
    prep = cyad.prepare_gradient(f, x, engine="tape")
    for point in (x, x * 3.0, x * 40.0, -x * 0.01):
        point = point.astype(dtype)
        np.testing.assert_allclose(cyad.gradient(f, point, prep=prep),
                                   cyad.gradient(f, point, engine="dual"), rtol=1e-6)

"""NumPy's floating-point warnings inside a differentiated function, as plain NumPy gives them.

cyad's kernels compute in C, outside NumPy's checks of the floating-point status; these
tests hold them to NumPy's behaviour: the same RuntimeWarning (category and message)
where NumPy warns, FloatingPointError under ``np.errstate(...="raise")``, nothing under
``"ignore"``, and nothing where only a derivative is singular (sqrt at 0), at first and
second order, in float64 and float32, for out-of-place and in-place operations.
"""
import warnings

import numpy as np
import pytest

import cyad


def _log_in_place(x):
    y = x * 1.0
    np.log(y, out=y)
    return np.sum(y)


def _overflow_in_place(x):
    y = x * 1.0
    y *= y
    y += y
    return np.sum(y)


def _large_in_place(x):
    # 300 elements: the overwritten operand is kept on the heap, not the stack
    y = np.concatenate([x] * 150)
    np.log(y, out=y)
    return np.sum(y)


# the largest number of the point's dtype
BIG = "big"

# functions for which plain NumPy warns at the given point
WARNING = [
    pytest.param(lambda x: np.sum(np.log(x - 2.0)), [1.0, 3.0], id="log"),
    pytest.param(lambda x: np.sum(1.0 / (x - 1.0)), [1.0, 3.0], id="divide"),
    pytest.param(lambda x: np.sum(np.exp(x * 800.0)), [1.0, 0.1], id="exp"),
    pytest.param(lambda x: np.sum(x ** 2), [BIG, 1.0], id="x**2"),
    pytest.param(lambda x: np.sum(np.arccosh(x)), [0.5, 2.0], id="arccosh"),
    pytest.param(lambda x: np.sum(x), [BIG, BIG], id="sum"),
    pytest.param(lambda x: np.sum(np.ones((1, x.size), x.dtype) @ x), [BIG, BIG], id="matmul"),
    pytest.param(lambda x: np.sum(x * 1e300), [1e10, 2.0], id="float-operand"),
    pytest.param(_log_in_place, [-1.0, 3.0], id="log-in-place"),
    pytest.param(_overflow_in_place, [BIG, 1.0], id="overflow-in-place"),
    pytest.param(_large_in_place, [-1.0, 3.0], id="log-in-place-large"),
    pytest.param(lambda x: np.sum(x // (x[1] - 1.0)), [1.0, 1.0], id="floor-divide-by-0"),
    pytest.param(lambda x: np.sum(x % (x - 1.0)), [1.0, 3.0], id="remainder-by-0"),
    pytest.param(lambda x: np.sum(np.fmod(x, x - 1.0)), [1.0, 3.0], id="fmod-by-0"),
    pytest.param(lambda x: np.sum(np.log(np.pad(x, 1, mode="reflect") - 2.0)), [1.0, 3.0],
                 id="log-of-pad"),
    pytest.param(lambda x: np.sum(np.take(x, [1, 0]) * 1e300), [1e10, 2.0], id="take"),
]

# functions with a singular derivative where NumPy computes the value without a warning
QUIET = [
    pytest.param(lambda x: np.sum(np.sqrt(x)), [0.0, 1.0], id="sqrt-at-0"),
    pytest.param(lambda x: np.sum(np.cbrt(x)), [0.0, 1.0], id="cbrt-at-0"),
    pytest.param(lambda x: np.sum(np.arcsin(x)), [1.0, 0.5], id="arcsin-at-1"),
    pytest.param(lambda x: np.sum(x ** 0.5), [0.0, 1.0], id="x**0.5-at-0"),
    pytest.param(lambda x: np.arctan2(x[0], x[1]), [0.0, 0.0], id="arctan2-at-origin"),
    pytest.param(lambda x: np.sum(np.sqrt(x, out=x * 1.0)), [0.0, 4.0], id="sqrt-out"),
]

OPERATORS = {
    "gradient": cyad.gradient,
    "hessian": cyad.hessian,
    "hvp": lambda f, x: cyad.hvp(f, x, np.ones_like(x)),
    "jacobian-of-gradient": lambda f, x: cyad.jacobian(lambda z: cyad.gradient(f, z), x),
}


def point_of(values, dtype):
    return np.array([np.finfo(dtype).max if v == BIG else v for v in values], dtype)


def warnings_of(call):
    """The distinct (category, message) pairs of the warnings call emits."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return {(w.category, str(w.message)) for w in caught}


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, point", WARNING)
def test_numpy_warnings_surface(f, point, dtype, operator):
    x = point_of(point, dtype)
    expected = warnings_of(lambda: f(x))
    assert expected and all(category is RuntimeWarning for category, _ in expected)
    assert warnings_of(lambda: OPERATORS[operator](f, x)) == expected


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("f, point", WARNING)
def test_errstate_raise_and_ignore_are_respected(f, point, operator):
    x = point_of(point, np.float64)
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError):
            f(x)
        with pytest.raises(FloatingPointError):
            OPERATORS[operator](f, x)
    with np.errstate(all="ignore"):
        assert warnings_of(lambda: OPERATORS[operator](f, x)) == set()


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, point", QUIET)
def test_a_singular_derivative_alone_warns_nothing(f, point, dtype, operator):
    x = np.array(point, dtype)
    with np.errstate(all="raise"):
        f(x)                                 # plain NumPy: no floating-point error
        result = OPERATORS[operator](f, x)   # and none from the derivatives
    assert not np.all(np.isfinite(result))   # although they are singular there


def test_the_values_are_those_numpy_warned_about():
    # the in-place log overwrote its operand: the warning is still about log(-1)
    x = np.array([-1.0, np.e])
    with pytest.warns(RuntimeWarning, match="invalid value encountered in log"):
        value, gradient = cyad.value_and_gradient(_log_in_place, x)
    assert np.isnan(value)
    np.testing.assert_array_equal(gradient, 1.0 / x)


# functions NumPy computes without a warning at these points, whose compositions in cyad
# must not warn either (sinc's series at 0 and far out, nan_to_num's masks)
SILENT = [
    pytest.param(lambda x: np.sum(np.sinc(x)), [0.0, 1e200], id="sinc"),
    pytest.param(lambda x: np.sum(np.nan_to_num(x * x) * x), [np.inf, np.nan], id="nan_to_num"),
    pytest.param(lambda x: np.sum(np.heaviside(x, 0.5) * x), [0.0, -2.0], id="heaviside"),
    pytest.param(lambda x: np.sum(np.copysign(x, -1.0) ** 2), [0.0, 1.0], id="copysign"),
]


@pytest.mark.parametrize("engine", ["dual", "tape"])
@pytest.mark.parametrize("operator", ["gradient", "hessian", "hvp"])
@pytest.mark.parametrize("f, point", SILENT)
def test_no_warning_where_numpy_gives_none(f, point, operator, engine):
    x = np.array(point)
    with np.errstate(all="raise"):
        f(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            if operator == "hvp":
                cyad.hvp(f, x, np.ones_like(x), engine=engine)
            else:
                OPERATORS[operator](f, x, engine=engine)

"""NumPy's floating-point warnings inside a differentiated function, as plain NumPy gives them.

cyad's kernels and the tape's compiled replay compute in C, outside NumPy's checks of the
floating-point status; these tests hold both engines to NumPy's behaviour: the same
RuntimeWarning (category and message) where NumPy warns, FloatingPointError under
``np.errstate(...="raise")``, nothing under ``"ignore"``, and nothing where only a
derivative is singular (sqrt at 0), at first and second order, in float64 and float32,
for out-of-place and in-place operations; a prepared tape warns on every call, as f
would on every evaluation.
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
    # the tape: its reverse sweep, forward over reverse, forward lanes (chunks of 1:
    # the value part apart from the tangents')
    "tape-gradient": lambda f, x: cyad.gradient(f, x, engine="tape"),
    "tape-hessian": lambda f, x: cyad.hessian(f, x, engine="tape"),
    "tape-hvp": lambda f, x: cyad.hvp(f, x, np.ones_like(x), engine="tape"),
    "tape-jacobian": lambda f, x: cyad.jacobian(f, x, engine="tape"),
    "tape-jacobian-by-1": lambda f, x: cyad.jacobian(f, x, engine="tape", chunk=1),
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


# prepared calls: the tape by default (gradient, hvp, hessian of a Python f), or named
PREPARED = {
    "gradient": lambda f, x: cyad.prepare_gradient(f, x),
    "hvp": lambda f, x: cyad.prepare_hvp(f, x, np.ones_like(x)),
    "hessian": lambda f, x: cyad.prepare_hessian(f, x),
    "tape-jacobian": lambda f, x: cyad.prepare_jacobian(f, x, engine="tape"),
}


def call_prepared(operator, f, x, prep):
    if operator == "gradient":
        return cyad.gradient(f, x, prep=prep)
    if operator == "hvp":
        return cyad.hvp(f, x, np.ones_like(x), prep=prep)
    if operator == "hessian":
        return cyad.hessian(f, x, prep=prep)
    return cyad.jacobian(f, x, prep=prep)


def warning_list(call):
    """The (category, message) of every warning call emits, sorted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return sorted((w.category.__name__, str(w.message)) for w in caught)


@pytest.mark.parametrize("operator", PREPARED)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("f, point", WARNING)
def test_a_prepared_tape_warns_on_every_call(f, point, dtype, operator):
    x = point_of(point, dtype)
    once = warning_list(lambda: f(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prep = PREPARED[operator](f, x)
    if operator != "tape-jacobian":
        assert prep.engine == "tape"
    # the first call records f and replays it: NumPy's warnings once, as f gives them
    for _ in range(3):
        assert warning_list(lambda: call_prepared(operator, f, x, prep)) == once
    # at a point where f does not warn, neither does the replay
    quiet = np.full_like(x, 3.0)
    if warning_list(lambda: f(quiet)):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise"):
            f(quiet)
            call_prepared(operator, f, quiet, prep)


@pytest.mark.parametrize("operator", PREPARED)
@pytest.mark.parametrize("f, point", WARNING)
def test_a_prepared_tape_raises_under_errstate_raise(f, point, operator):
    x = point_of(point, np.float64)
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError) as expected:
            f(x)
        prep = PREPARED[operator](f, np.full_like(x, 3.0))
        for _ in range(2):   # and the prep stays usable
            with pytest.raises(FloatingPointError) as raised:
                call_prepared(operator, f, x, prep)
            assert str(raised.value) == str(expected.value)
    with np.errstate(all="ignore"):
        assert warning_list(lambda: call_prepared(operator, f, x, prep)) == []
    # the results are the same, warned about or not
    with np.errstate(all="ignore"):
        loud = call_prepared(operator, f, x, prep)
        quiet = OPERATORS["gradient"](f, x) if operator == "gradient" else loud
    np.testing.assert_array_equal(loud, quiet)


def test_errstate_inside_f_applies_on_the_tape():
    def f(x):
        with np.errstate(invalid="ignore"):
            y = np.log(x)            # silent: f asked
        return np.sum(y / (x - 2.0))  # divide by zero warns

    x = np.array([-1.0, 2.0])
    expected = warning_list(lambda: f(x))
    assert expected == [("RuntimeWarning", "divide by zero encountered in divide")]
    prep = cyad.prepare_gradient(f, np.array([1.0, 3.0]), engine="tape")
    for _ in range(2):
        assert warning_list(lambda: cyad.gradient(f, x, prep=prep)) == expected


def test_seterrcall_sees_numpy_calls_from_the_tape():
    f = WARNING[0].values[0]
    x = np.array([1.0, 3.0])
    prep = cyad.prepare_gradient(f, x, engine="tape")
    seen = []
    with np.errstate(all="call", call=lambda kind, flag: seen.append(kind)):
        f(x)
        expected, seen[:] = list(seen), []
        cyad.gradient(f, x, prep=prep)
        cyad.gradient(f, x, prep=prep)
    assert expected == ["invalid value"]
    assert seen == expected * 2


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("operator", ["gradient", "hvp", "hessian"])
@pytest.mark.parametrize("f, point", QUIET)
def test_a_prepared_tape_warns_nothing_for_a_singular_derivative(f, point, dtype, operator):
    x = np.array(point, dtype)
    with np.errstate(all="raise"):
        f(x)
        prep = PREPARED[operator](f, x)
        result = call_prepared(operator, f, x, prep)
        result = call_prepared(operator, f, x, prep)
    assert not np.all(np.isfinite(result))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [1, 7, 64, 1000])
def test_sine_and_cosine_raise_no_flag_on_finite_input(n, dtype):
    # the vectorised sin and cos (and NumPy's loops) of the replay: no flag, so no call
    # falls back to NumPy; a flag would show as a call of a gradient's reverse sweep that
    # the dual engine answers (a partial may be infinite), which warns as f does
    def f(x):
        return np.sum(np.sin(x) * np.cos(2.0 * x) + np.sin(x) ** 2)

    x = np.linspace(-1e4, 1e4, n).astype(dtype)
    prep = cyad.prepare_gradient(f, x, engine="tape")
    for _ in range(2):
        cyad.gradient(f, x, prep=prep)
    assert prep.engine_state.forward_calls == 0
    with pytest.warns(RuntimeWarning, match="invalid value encountered in (sin|cos)"):
        cyad.gradient(f, np.full_like(x, np.inf), prep=prep)
    assert prep.engine_state.forward_calls == 1


def _log_into_y(y, x):
    y[:] = np.log(x - 2.0) + 1.0 / y


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_two_argument_f_warns_on_the_tape(dtype):
    # f(y, x): y's incoming values are an input of the tape too (1 / y divides by 0)
    x, y = np.array([1.0, 3.0], dtype), np.array([0.0, 1.0], dtype)
    expected = warning_list(lambda: _log_into_y(y.copy(), x))
    assert len(expected) == 2
    assert warning_list(lambda: cyad.jacobian(_log_into_y, x, y=y.copy(),
                                              engine="tape")) == expected
    prep = cyad.prepare_pullback(_log_into_y, x, np.ones(2, dtype), y=y.copy(), engine="tape")
    for _ in range(2):
        assert warning_list(lambda: cyad.pullback(_log_into_y, x, np.ones(2, dtype), y=y.copy(),
                                                  prep=prep)) == expected


def test_a_recorded_function_warns_through_the_tape_engine():
    f = WARNING[0].values[0]
    x = np.array([1.0, 3.0])
    expected = warning_list(lambda: f(x))
    recorded = warning_list(lambda: cyad.record(f, x))
    assert recorded == []      # recording computes in silence
    w = cyad.record(f, x)
    for _ in range(2):
        assert warning_list(lambda: cyad.gradient(w, x)) == expected

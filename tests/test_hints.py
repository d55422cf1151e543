"""What f is told when it asks cyad's arrays for something they refuse, on every engine:
the function named by its public path, and what to use instead.
"""
import math
import re

import numpy as np
import pytest
from scenarios import ENGINES

import cyad
from cyad._hints import function_name

X = np.array([0.5, 1.5, 2.5])

WHERE = {"dual": "dual arrays", "tape": "engine='tape'"}


def test_functions_are_named_by_their_public_module():
    assert function_name(np.linalg.qr) == "numpy.linalg.qr"
    assert function_name(np.fft.fft) == "numpy.fft.fft"
    assert function_name(np.sum) == "numpy.sum"
    special = pytest.importorskip("scipy.special")
    assert function_name(special.logsumexp) == "scipy.special.logsumexp"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("function, name", [
    (lambda x: np.lib.stride_tricks.sliding_window_view(x, 2),
     "numpy.lib.stride_tricks.sliding_window_view")])
def test_an_unsupported_function_in_a_submodule_is_named_by_its_path(function, name, engine):
    with pytest.raises(TypeError, match=rf"cyad: {name} is not supported by {WHERE[engine]}"
                       if engine == "tape" else rf"cyad: {name} is not supported on dual arrays"):
        cyad.gradient(lambda x: np.sum(np.abs(function(x))), X, engine=engine)


@pytest.mark.parametrize("function, numpy", [(round, "round"), (math.floor, "floor"),
                                             (math.ceil, "ceil"), (math.trunc, "trunc")])
def test_python_ints_of_a_dual_say_what_to_use(function, numpy):
    name = "round" if function is round else f"math.{numpy}"
    with pytest.raises(TypeError, match=rf"{name}\(\) of a dual array would give a Python int "
                                        rf".*np\.{numpy}\(x\)"):
        cyad.gradient(lambda x: function(x[0]) * x[1], X)


@pytest.mark.parametrize("function", [round, math.floor, math.ceil, math.trunc])
def test_python_ints_of_a_traced_value_are_guarded(function):
    # piecewise constant, as int(): the factor's derivative is 0, and a replay where it
    # changes records anew
    f = lambda x: function(x[0] * 2.0) * x[1]  # noqa: E731
    prep = cyad.prepare_gradient(f, X, engine="tape")
    for point in (X, X + np.array([0.4, 0.0, 0.0]), X):
        grad = cyad.gradient(f, point, prep=prep)
        np.testing.assert_array_equal(grad, [0.0, function(point[0] * 2.0), 0.0])


@pytest.mark.parametrize("engine", ENGINES)
def test_round_with_digits_rounds(engine):
    # rounded values, derivative 0: only x[1]'s factor remains
    grad = cyad.gradient(lambda x: np.sum(round(x * 3.3, 1) * x[1]), X, engine=engine)
    np.testing.assert_allclose(grad, [0.0, np.sum(np.round(X * 3.3, 1)), 0.0])


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", ["item", "tolist"])
def test_item_and_tolist_say_the_derivative_would_be_lost(method, engine):
    match = (rf"{method}\(\) of a dual array gives Python floats.*index the array"
             if engine == "dual" else rf"Python number through {method}\(\): that would drop")
    with pytest.raises(TypeError, match=match):
        cyad.gradient(lambda x: getattr(x[:1], method)() * x[1], X, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_float_and_int_say_the_derivative_would_be_lost(engine):
    with pytest.raises(TypeError, match="float"):
        cyad.gradient(lambda x: float(x[0]) * x[1], X, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method, advice", [
    ("partition", r"call np\.partition\(x, \.\.\.\), which cyad supports"),
    ("byteswap", "cyad has no derivative rule for it"),
])
def test_a_missing_ndarray_method_is_named(method, advice, engine):
    where = "dual arrays" if engine == "dual" else "traced arrays"

    def f(x):
        assert not hasattr(x, method)    # an AttributeError: hasattr still answers
        getattr(x, method)
        return np.sum(x)

    with pytest.raises(AttributeError, match=rf"cyad: ndarray\.{method} is not supported on "
                                             rf"{where} \({advice}\)"):
        cyad.gradient(f, X, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_attribute_ndarrays_lack_gets_pythons_error(engine):
    with pytest.raises(AttributeError, match="has no attribute 'no_such_thing'"):
        cyad.gradient(lambda x: x.no_such_thing, X, engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_floor_divide_and_mod_differentiate(engine):
    # // is piecewise constant, % has derivative 1 in its dividend
    grad = cyad.gradient(lambda x: np.sum((x // 0.4) * x + x % 0.4), X, engine=engine)
    np.testing.assert_allclose(grad, X // 0.4 + 1.0)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unsupported_scipy_ufunc_is_named_by_scipys_path(engine):
    special = pytest.importorskip("scipy.special")
    with pytest.raises(TypeError, match=r"cyad: scipy\.special\.kolmogorov is not supported"):
        cyad.gradient(lambda x: np.sum(special.kolmogorov(x * 0.1)), X, engine=engine)


def _returns_instead_of_writing(y, x):
    # y= read as "data": f(y, x) returns its result and writes nothing into y
    return np.sum((y - x[0]) ** 2) + x[1] ** 2


@pytest.mark.parametrize("engine", [None, "dual", "tape"])
@pytest.mark.parametrize("operator", ["jacobian", "pushforward", "pullback"])
def test_f_returning_a_value_under_y_is_refused(operator, engine):
    data, p = np.arange(4.0), np.array([1.0, 2.0])
    extra = {"jacobian": (), "pushforward": (np.ones(2),), "pullback": (np.ones(4),)}[operator]
    with pytest.raises(ValueError, match=r"f returned an array of shape \(\) when called as "
                       r"f\(y, x\) with y=.*drop y="):
        getattr(cyad, operator)(_returns_instead_of_writing, p, *extra, y=data.copy(),
                                engine=engine)


@pytest.mark.parametrize("engine", ["dual", "tape"])
def test_f_returning_y_itself_under_y_is_fine(engine):
    def in_place(y, x):
        y[...] = 2.0 * x
        return y

    np.testing.assert_allclose(cyad.jacobian(in_place, X, y=np.zeros(3), engine=engine),
                               2.0 * np.eye(3))


@pytest.mark.parametrize("engine", [None, "dual", "tape"])
@pytest.mark.parametrize("operator", ["gradient", "hvp", "hessian"])
def test_a_scalar_operator_under_y_names_ys_shape(operator, engine):
    def in_place(y, x):
        y[...] = x ** 2

    extra = (np.ones(3),) if operator == "hvp" else ()
    with pytest.raises(ValueError, match=rf"{operator} needs a scalar-valued f, but y, f's "
                       r"output in f\(y, x\), has shape \(3,\)"):
        getattr(cyad, operator)(in_place, X, *extra, y=np.zeros(3), engine=engine)
    with pytest.raises(ValueError, match=rf"{operator} needs a scalar-valued f, but f returns "
                       r"shape \(3,\)"):
        getattr(cyad, operator)(lambda x: x ** 2, X, *extra, engine=engine)


def _with_math(x):
    return math.exp(x[0]) + np.sum(x)


def _with_float64(x):
    return np.float64(x[0]) * np.sum(x)


def _with_vectorize(x):
    return np.sum(np.vectorize(lambda t: 2.0 * t)(x))


def _with_quad(x):
    from scipy import integrate
    return integrate.quad(lambda t: t * x[0], 0.0, 1.0)[0] + np.sum(x)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("f, source, inside, advice", [
    (_with_math, "return math.exp(x[0]) + np.sum(x)", "",
     "math's functions take Python floats: use NumPy's"),
    (_with_float64, "return np.float64(x[0]) * np.sum(x)", "",
     r"index the array instead \(x\[0\] is a number of cyad's"),
    (_with_vectorize, "return np.sum(np.vectorize(lambda t: 2.0 * t)(x))",
     ", inside numpy.vectorize", "np.vectorize calls its function on plain numbers"),
    (_with_quad, "return integrate.quad(lambda t: t * x[0], 0.0, 1.0)[0] + np.sum(x)",
     ", inside scipy.integrate.quad", "a SciPy function cyad has no rule for"),
], ids=["math.exp", "np.float64", "np.vectorize", "scipy.integrate.quad"])
def test_a_refused_conversion_names_the_line_and_the_function_that_asked(
        f, source, inside, advice, engine):
    if f is _with_quad:
        pytest.importorskip("scipy")
    line = f.__code__.co_firstlineno + (2 if f is _with_quad else 1)
    where = re.escape(f"In {f.__name__} ({__file__}:{line}): `{source}`{inside}.")
    with pytest.raises(TypeError, match=rf"derivative\. {where} .*{advice}"):
        cyad.gradient(f, X, engine=engine)


def _into_plain_buffer(x):
    buffer = np.zeros(3)
    buffer[0] = x[0]
    return np.sum(buffer * x)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_number_stored_into_a_plain_ndarray_is_refused_by_cyad(engine):
    # (NumPy reports the tape's refusal as "setting an array element with a sequence")
    with pytest.raises(TypeError, match=r"that would drop its derivative\. In "
                       r"_into_plain_buffer .*`buffer\[0\] = x\[0\]`.*np\.zeros_like\(x\)"):
        cyad.gradient(_into_plain_buffer, X, engine=engine)


def _with_unwrap(x):
    return np.sum(np.unwrap(x))


@pytest.mark.parametrize("engine", ENGINES)
def test_an_unsupported_function_names_the_users_line_and_the_way_out(engine):
    line = _with_unwrap.__code__.co_firstlineno + 1
    where = re.escape(f"In _with_unwrap ({__file__}:{line}): "
                      "`return np.sum(np.unwrap(x))`.")
    with pytest.raises(TypeError, match=r"numpy\.unwrap is not supported .*; "
                       rf"cyad\.custom_derivative gives it rules of yours\. {where}$"):
        cyad.gradient(_with_unwrap, X, engine=engine)


def test_a_traced_array_kept_from_an_earlier_call_is_named_as_such():
    kept = []

    def f(x):
        if kept:
            return np.sum(x * kept[0])
        kept.append(x[0])
        return np.sum(x ** 2)

    cyad.gradient(f, X, engine="tape")
    with pytest.raises(TypeError, match=r"an array of an earlier differentiation met this one.*"
                       r"kept in a global, a list or an attribute from an earlier call of f\?\)"
                       r"\. In .*f \(.*\): `return np\.sum\(x \* kept\[0\]\)`\.$"):
        cyad.gradient(f, X, engine="tape")

"""Preps: one class per operator family on the shared base, the engine= seam, and the
docstring fragments the operators share."""
import inspect
import re

import numpy as np
import pytest
from numpy.testing import assert_allclose

import cyad
import cyad.scipy
from cyad import _docstrings, _engines, _families

X = np.array([0.3, -1.2, 0.7, 2.0])
V = np.array([1.0, 0.5, -2.0, 0.25])


def cubic(x):
    # f(x) = sum(x^3) + x0 x1: gradient 3 x^2 + (x1, x0, 0, ..), Hessian diag(6 x) + the x0 x1 pair
    return np.sum(x ** 3) + x[0] * x[1]


def cubic_gradient(x):
    g = 3 * x ** 2
    g[0] += x[1]
    g[1] += x[0]
    return g


def cubic_hessian(x):
    h = np.diag(6 * x)
    h[0, 1] = h[1, 0] = 1.0
    return h


def scalar(t):
    return np.stack([np.sin(t), t ** 3])


# operator, prepare, arguments after f, the analytic result at X (t = 0.4 for the scalar ones)
T = 0.4
CASES = {
    "pushforward": (cyad.pushforward, cyad.prepare_pushforward, (X, V),
                    lambda: cubic_gradient(X) @ V, cubic),
    "pullback": (cyad.pullback, cyad.prepare_pullback, (X, V),
                 lambda: 3 * X ** 2 * V, lambda x: x ** 3),
    "derivative": (cyad.derivative, cyad.prepare_derivative, (T,),
                   lambda: np.array([np.cos(T), 3 * T ** 2]), scalar),
    "gradient": (cyad.gradient, cyad.prepare_gradient, (X,), lambda: cubic_gradient(X), cubic),
    "jacobian": (cyad.jacobian, cyad.prepare_jacobian, (X,),
                 lambda: np.diag(3 * X ** 2), lambda x: x ** 3),
    "second_derivative": (cyad.second_derivative, cyad.prepare_second_derivative, (T,),
                          lambda: np.array([-np.sin(T), 6 * T]), scalar),
    "hvp": (cyad.hvp, cyad.prepare_hvp, (X, V), lambda: cubic_hessian(X) @ V, cubic),
    "hessian": (cyad.hessian, cyad.prepare_hessian, (X,), lambda: cubic_hessian(X), cubic),
}
CLASSES = {"pushforward": "PushforwardPrep", "pullback": "PullbackPrep",
           "derivative": "DerivativePrep",
           "gradient": "GradientPrep", "jacobian": "JacobianPrep",
           "second_derivative": "SecondDerivativePrep", "hvp": "HvpPrep",
           "hessian": "HessianPrep"}


@pytest.fixture
def other_engine(monkeypatch):
    """A second engine name in the registry (the dual engine again), as a new engine adds
    its own."""
    monkeypatch.setitem(_engines.ENGINES, "other", _engines.ENGINES["dual"])
    return "other"


# the engine a prepare_* without engine= chooses for a Python f: the tape where it replays
# the operator far faster (gradients, hvps, Hessians), the dual engine elsewhere
# (every case is a prepared call of a Python f)
DEFAULT_ENGINE = dict.fromkeys(CASES, "tape")


@pytest.mark.parametrize("family", CASES)
def test_each_family_has_its_prep_class(family):
    operator, prepare, args, expected, f = CASES[family]
    prep = prepare(f, *args)
    assert type(prep).__name__ == CLASSES[family]
    assert isinstance(prep, cyad.Prep)
    assert prep.family.name == family.upper()
    assert prep.engine == DEFAULT_ENGINE[family]
    assert prep.order == (2 if family in ("second_derivative", "hvp", "hessian") else 1)
    assert family in repr(prep)
    assert_allclose(operator(f, *args, prep=prep), expected(), rtol=1e-14)


def test_callers_ask_an_engine_what_it_can_do():
    # abilities, not names: what replays a tape, what holds the GIL for every evaluation of f,
    # what freezes the Python state f reads
    x = np.linspace(0.1, 1.0, 4)

    def f(x):
        return np.sum(x ** 2)

    tape = cyad.prepare_gradient(f, x, engine="tape")
    dual = cyad.prepare_gradient(f, x, engine="dual")
    c_function = cyad.prepare_gradient(cyad.record(f, x), x, engine="dual")
    assert (tape.replays, tape.holds_gil) == (True, False)
    assert (dual.replays, dual.holds_gil) == (False, True)
    assert (c_function.replays, c_function.holds_gil) == (False, False)
    with pytest.raises(ValueError, match="unknown engine"):
        _engines.engine_type("other")


def test_the_default_engine_is_chosen_in_one_place():
    # the rule, and the reason a prep reports, come from cyad/_engines.py
    x = np.linspace(0.1, 1.0, 4)

    def f(x):
        return np.sum(x ** 2)

    for recorded, python, size, one_shot, engine in [
            (True, False, 4, True, "tape"), (False, False, 1000, False, "dual"),
            (False, True, 4, True, "dual"), (False, True, 4, False, "tape"),
            (False, True, _engines.TAPE_FROM["gradient"], True, "tape")]:
        assert _engines.default_engine("gradient", recorded, python, size, one_shot)[0] == engine
    assert _engines.default_engine("jacobian", False, True, 10**6, False)[0] == "tape"
    assert _engines.default_engine("jacobian", False, True, 10**6, True)[0] == "dual"
    assert _engines.default_engine("jacobian", True, False, 4, False)[0] == "dual"
    prep = cyad.prepare_gradient(f, x)
    assert prep.why_engine == _engines.default_engine("gradient", False, True, 4, False)[1]
    size = _engines.TAPE_FROM["gradient"]
    assert f"from {size} elements of x" in " ".join(_engines.default_text("gradient").split())
    assert f"from {size} elements of x" in " ".join(cyad.gradient.__doc__.split())


@pytest.mark.parametrize("engine", [None, "dual", "other"])
@pytest.mark.parametrize("family", CASES)
def test_every_operator_and_prepare_take_engine(family, engine, other_engine):
    operator, prepare, args, expected, f = CASES[family]
    assert_allclose(operator(f, *args, engine=engine), expected(), rtol=1e-14)
    prep = prepare(f, *args, engine=engine)
    assert prep.engine == (engine or DEFAULT_ENGINE[family])
    assert_allclose(operator(f, *args, prep=prep, engine=engine), expected(), rtol=1e-14)
    # without engine=, a prep runs on its own engine
    assert_allclose(operator(f, *args, prep=prep), expected(), rtol=1e-14)


@pytest.mark.parametrize("family", CASES)
def test_an_unknown_engine_is_refused_naming_the_engines(family):
    operator, prepare, args, expected, f = CASES[family]
    with pytest.raises(ValueError,
                       match=r"unknown engine 'symbolic'; the engines are 'dual', 'tape'"):
        prepare(f, *args, engine="symbolic")
    with pytest.raises(ValueError, match="unknown engine 'symbolic'"):
        operator(f, *args, engine="symbolic")
    prep = prepare(f, *args)
    with pytest.raises(ValueError, match="unknown engine 'symbolic'"):
        operator(f, *args, prep=prep, engine="symbolic")
    with pytest.raises(ValueError, match="unknown engine"):
        prepare(f, *args, engine=["dual"])


@pytest.mark.parametrize("family", CASES)
def test_a_prep_of_another_engine_is_refused(family, other_engine):
    operator, prepare, args, expected, f = CASES[family]
    prep = prepare(f, *args, engine=other_engine)
    with pytest.raises(ValueError, match="engine='dual' differs from the prep's engine 'other'"):
        operator(f, *args, prep=prep, engine="dual")
    prep = prepare(f, *args)
    with pytest.raises(ValueError, match=f"engine='other' differs from the prep's engine "
                                         f"'{DEFAULT_ENGINE[family]}'"):
        operator(f, *args, prep=prep, engine=other_engine)
    # the refused calls left the prep working
    assert_allclose(operator(f, *args, prep=prep), expected(), rtol=1e-14)


def test_value_operators_share_the_prep_and_its_engine(other_engine):
    prep = cyad.prepare_hessian(cubic, X, engine=other_engine)
    value, g, h = cyad.value_gradient_and_hessian(cubic, X, prep=prep, engine=other_engine)
    assert value == pytest.approx(cubic(X), rel=1e-15)
    assert_allclose(g, cubic_gradient(X), rtol=1e-14)
    assert_allclose(h, cubic_hessian(X), rtol=1e-14)
    with pytest.raises(ValueError, match="differs from the prep's engine"):
        cyad.value_gradient_and_hessian(cubic, X, prep=prep, engine="dual")


def test_the_scipy_adapters_and_profile_take_engine(other_engine):
    for make in (cyad.scipy.gradient, cyad.scipy.hessian, cyad.scipy.jacobian):
        with pytest.raises(ValueError, match="unknown engine"):
            make(cubic, engine="symbolic")
    with pytest.raises(ValueError, match="unknown engine"):
        cyad.scipy.ode_jacobian(lambda t, y: -y, engine="symbolic")
    jac = cyad.scipy.gradient(cubic, X, engine=other_engine)
    assert jac.prep.engine == other_engine
    assert_allclose(jac(X), cubic_gradient(X), rtol=1e-14)
    hessp = cyad.scipy.hessp(cubic, engine=other_engine)
    assert_allclose(hessp(X, V), cubic_hessian(X) @ V, rtol=1e-14)
    assert hessp.prep.engine == other_engine
    with pytest.raises(ValueError, match="unknown engine"):
        cyad.profile("gradient", cubic, X, seconds=0.01, engine="symbolic")
    assert cyad.profile("gradient", cubic, X, seconds=0.01, engine=other_engine).chunk == 4


def test_the_family_classes_are_the_ones_prepare_makes():
    assert set(_families.PREP_TYPES.values()) == {getattr(_families, name)
                                                  for name in CLASSES.values()}
    assert issubclass(_families.DerivativePrep, _families.PushforwardPrep)
    assert issubclass(_families.GradientPrep, _families.JacobianPrep)


# -- shared docstring fragments -----------------------------------------------------------

def test_fill_substitutes_fragments_at_their_indentation():
    def f():
        """Head.

        Parameters
        ----------
        %(y)s
        %(prep)s
        """
    _docstrings.fill(f, prepare="prepare_thing")
    lines = f.__doc__.split("\n")
    assert lines[4:9] == [
        "        y : ndarray, optional",
        "            The output buffer of a two-argument f; afterwards it holds f's value.",
        "        prep : Prep, optional",
        "            From `prepare_thing`, for repeated calls at inputs of the same shapes,",
        "            dtype and function form."]


def test_fill_refuses_an_unknown_fragment():
    def f():
        """%(no_such_fragment)s"""
    with pytest.raises(KeyError):
        _docstrings.fill(f)


OPERATORS = [getattr(cyad, name) for name in cyad.__all__
             if name in CASES or name.startswith(("prepare_", "value_")) or name in (
                 "gradient_and_hvp",)]


@pytest.mark.parametrize("operator", OPERATORS, ids=lambda f: f.__name__)
def test_every_operator_docstring_is_filled_and_documents_engine(operator):
    doc = inspect.cleandoc(operator.__doc__)
    # no fragment left unfilled: %(name)s, or a {key} field (a numpydoc choice set such as
    # {"csr", "csc"} is not one)
    assert "%(" not in doc and not re.search(r"\{\w+\}", doc.split("Examples")[0])
    listed = re.search(r", engine(, workers)?(, holomorphic)?\n", doc)
    assert "\nengine : str, optional\n" in doc or listed
    parameters = inspect.signature(operator).parameters
    if "workers" in parameters:
        assert "\nworkers : int or map-like, optional\n" in doc or ", engine, workers" in doc
    if "holomorphic" in parameters:
        assert "\nholomorphic : bool, optional\n" in doc or ", holomorphic\n" in doc


def test_a_nested_call_refuses_an_unknown_engine():
    def f(x):
        return cyad.derivative(lambda t: t * x, 1.0, engine="symbolic")

    with pytest.raises(ValueError, match="unknown engine 'symbolic'"):
        cyad.derivative(f, 2.0)

    def g(x):
        return cyad.derivative(lambda t: t * x, 1.0, engine="dual")

    assert cyad.derivative(g, 2.0) == 1.0

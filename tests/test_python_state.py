"""A tape cyad chooses by default never answers from stale Python state.

Every way a number can reach f besides x (`WAYS`: a closure, a global, an array's element, a
dict's or list's item, an attribute, a class's, a module's, a default argument, a partial's
argument, SciPy's args, ...) is combined with every way f can use it (`USES`: as a factor, a
branch, a length, an exponent): the state changes between two calls of one prep, and the
answer is held to the dual engine's, which evaluates f on every call.
"""
import collections
import functools
import sys
import types

import numpy as np
import pytest
from numpy.testing import assert_allclose

import cyad
import cyad._tape.state

X = np.linspace(-0.8, 1.3, 7)
V = np.cos(np.arange(7.0))

# the number f reads: FIRST when prepared, SECOND after the change (a branch on c > 2.5
# flips, a length 2 becomes 3)
FIRST, SECOND = 2.0, 3.0

USES = {
    "factor": lambda c, x: c * np.sum(np.sin(x) * x),
    "branch": lambda c, x: np.sum(np.sin(x)) if c > 2.5 else np.sum(x ** 3),
    "length": lambda c, x: np.sum(np.exp(x[:int(c)])),
    "exponent": lambda c, x: np.sum(np.cosh(x) ** c),
}

GLOBAL_NUMBER = FIRST


class _Slotted:
    __slots__ = ("c",)


class _Listed(list):
    pass


class _WithProperty:
    def __init__(self):
        self._c = FIRST

    @property
    def c(self):
        return self._c


class _Model:
    def __init__(self):
        self.c = FIRST

    def loss(self, x, use):
        return use(self.c, x)


class _Callable:
    def __init__(self, use):
        self.weights = {"c": FIRST}
        self.use = use

    def __call__(self, x):
        return self.use(self.weights["c"], x)


def _class_with(use):
    class Settings:
        c = FIRST

        @classmethod
        def value(cls):
            return cls.c

    def set_value(v):
        Settings.c = v

    return (lambda x: use(Settings.value(), x)), set_value


def _module_with(use):
    config = types.ModuleType("user_config")   # a module of the user's, as `import config`
    config.c = FIRST
    namespace = {"config": config, "use": use}
    exec("def f(x):\n    return use(config.c, x)\n", namespace)

    def set_value(v):
        config.c = v

    return namespace["f"], set_value


def _global(use):
    def set_value(v):
        global GLOBAL_NUMBER
        GLOBAL_NUMBER = v
    return (lambda x: use(GLOBAL_NUMBER, x)), set_value


def _closure(use):
    c = FIRST

    def set_value(v):
        nonlocal c
        c = v
    return (lambda x: use(c, x)), set_value


def _holder(kind):
    # a number inside a container f closes over, changed in place
    def way(use):
        if kind == "ndarray":
            box = np.array([FIRST, 0.0])
            read, write = (lambda: box[0]), (lambda v: box.__setitem__(0, v))
        elif kind == "0-d array":
            box = np.array(FIRST)
            read, write = (lambda: box[()]), (lambda v: box.__setitem__((), v))
        elif kind == "dict":
            box = {"k": FIRST}
            read, write = (lambda: box["k"]), (lambda v: box.__setitem__("k", v))
        elif kind == "list":
            box = [FIRST]
            read, write = (lambda: box[0]), (lambda v: box.__setitem__(0, v))
        elif kind == "tuple in a list":
            box = [(0.0, FIRST)]
            read, write = (lambda: box[0][1]), (lambda v: box.__setitem__(0, (0.0, v)))
        elif kind == "list in a dict":
            box = {"a": [1.0, FIRST]}
            read, write = (lambda: box["a"][1]), (lambda v: box["a"].__setitem__(1, v))
        elif kind == "NumPy scalar in a list":
            box = [np.float64(FIRST)]
            read, write = (lambda: box[0]), (lambda v: box.__setitem__(0, np.float64(v)))
        elif kind == "appended to a list":
            box = [FIRST]
            read, write = (lambda: box[-1]), box.append
        elif kind == "attribute":
            box = types.SimpleNamespace(c=FIRST)
            read, write = (lambda: box.c), (lambda v: setattr(box, "c", v))
        elif kind == "slot":
            box = _Slotted()
            box.c = FIRST
            read, write = (lambda: box.c), (lambda v: setattr(box, "c", v))
        elif kind == "attribute of an attribute":
            box = types.SimpleNamespace(inner=types.SimpleNamespace(c=FIRST))
            read, write = (lambda: box.inner.c), (lambda v: setattr(box.inner, "c", v))
        elif kind == "array in an attribute":
            box = types.SimpleNamespace(w=np.array([0.5, FIRST]))
            read, write = (lambda: box.w[1]), (lambda v: box.w.__setitem__(1, v))
        elif kind == "defaultdict":
            box = collections.defaultdict(float, k=FIRST)
            read, write = (lambda: box["k"]), (lambda v: box.__setitem__("k", v))
        elif kind == "list subclass":
            box = _Listed([FIRST])
            read, write = (lambda: box[0]), (lambda v: box.__setitem__(0, v))
        elif kind == "set":
            box = {FIRST}
            read = lambda: SECOND if SECOND in box else FIRST   # noqa: E731
            write = box.add
        return (lambda x: use(read(), x)), write
    return way


def _default_argument(use):
    def f(x, c=[FIRST]):  # noqa: B006 (the mutable default is the state under test)
        return use(c[0], x)
    return f, lambda v: f.__defaults__[0].__setitem__(0, v)


def _defaults_rebound(use):
    def f(x, c=FIRST):
        return use(c, x)

    def set_value(v):
        f.__defaults__ = (v,)
    return f, set_value


def _keyword_default(use):
    def f(x, *, c=FIRST):
        return use(c, x)

    def set_value(v):
        f.__kwdefaults__["c"] = v
    return f, set_value


def _partial(use):
    weights = [FIRST]
    return (functools.partial(lambda x, w: use(w[0], x), w=weights),
            lambda v: weights.__setitem__(0, v))


def _bound_method(use):
    model = _Model()
    return functools.partial(model.loss, use=use), lambda v: setattr(model, "c", v)


def _callable_object(use):
    f = _Callable(use)
    return f, lambda v: f.weights.__setitem__("c", v)


def _helper_function(use):
    # f calls a function of the user's that closes over the number
    box = {"c": FIRST}

    def helper():
        return box["c"]
    return (lambda x: use(helper(), x)), lambda v: box.__setitem__("c", v)


def _property(use):
    box = _WithProperty()
    return (lambda x: use(box.c, x)), lambda v: setattr(box, "_c", v)


WAYS = {
    "closure cell": _closure,
    "module global": _global,
    "class attribute": _class_with,
    "module attribute": _module_with,
    "default argument": _default_argument,
    "defaults rebound": _defaults_rebound,
    "keyword default": _keyword_default,
    "partial's argument": _partial,
    "bound method's object": _bound_method,
    "callable object": _callable_object,
    "function f calls": _helper_function,
    "property": _property,
    **{kind: _holder(kind) for kind in [
        "ndarray", "0-d array", "dict", "list", "tuple in a list", "list in a dict",
        "NumPy scalar in a list", "appended to a list", "attribute", "slot",
        "attribute of an attribute", "array in an attribute", "defaultdict",
        "list subclass", "set"]},
}

OPERATORS = {
    "gradient": (lambda f, prep: cyad.gradient(f, X, prep=prep),
                 lambda f: cyad.prepare_gradient(f, X),
                 lambda f: cyad.gradient(f, X, engine="dual")),
    "hvp": (lambda f, prep: cyad.hvp(f, X, V, prep=prep),
            lambda f: cyad.prepare_hvp(f, X, V),
            lambda f: cyad.hvp(f, X, V, engine="dual")),
    "hessian": (lambda f, prep: cyad.hessian(f, X, prep=prep),
                lambda f: cyad.prepare_hessian(f, X),
                lambda f: cyad.hessian(f, X, engine="dual")),
}


@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("use", USES)
@pytest.mark.parametrize("way", WAYS)
def test_state_changed_between_calls_is_seen(way, use, operator):
    f, set_value = WAYS[way](USES[use])
    call, prepare, reference = OPERATORS[operator]
    prep = prepare(f)
    assert prep.engine == "tape"
    assert_allclose(call(f, prep), reference(f), rtol=1e-13, atol=1e-14)
    set_value(SECOND)
    try:
        assert_allclose(call(f, prep), reference(f), rtol=1e-13, atol=1e-14)
        assert not prep.engine_state.delegated
        before = prep.engine_state.traces
        call(f, prep)       # unchanged since: not traced again
        assert prep.engine_state.traces == before
    finally:
        set_value(FIRST)


@pytest.mark.parametrize("way", WAYS)
def test_at_points_sees_state_changed_between_calls(way):
    f, set_value = WAYS[way](USES["factor"])
    points = np.stack([X, X[::-1], 0.5 * X])
    expected = [cyad.gradient(f, p, engine="dual") for p in points]
    assert_allclose(cyad.at_points(cyad.gradient, f, points), expected, rtol=1e-13)
    set_value(SECOND)
    try:
        expected = [cyad.gradient(f, p, engine="dual") for p in points]
        assert_allclose(cyad.at_points(cyad.gradient, f, points), expected, rtol=1e-13)
    finally:
        set_value(FIRST)


@pytest.mark.parametrize("adapter", ["gradient", "value_and_gradient", "hessian", "hessp"])
@pytest.mark.parametrize("holder", ["number", "list", "dict", "ndarray"])
def test_scipy_args_changed_in_place_between_calls_are_seen(adapter, holder):
    # the extra arguments SciPy passes (args=): the same objects, their contents changed;
    # their float leaves are inputs of the tape, recorded once
    pytest.importorskip("scipy")
    import cyad.scipy

    def read(a):
        return a if holder == "number" else a["c"] if holder == "dict" else a[0]

    def fun(x, a, b):
        return read(a) * np.sum(np.sin(x) * x) + b

    def make(c):
        return (c if holder == "number" else {"c": c} if holder == "dict"
                else [c] if holder == "list" else np.array([c]))

    a = make(FIRST)
    call = getattr(cyad.scipy, adapter)(fun)
    extra = (V,) if adapter == "hessp" else ()
    expected = {"gradient": cyad.gradient, "value_and_gradient": cyad.value_and_gradient,
                "hessian": cyad.hessian, "hessp": cyad.hvp}[adapter]
    for c in (FIRST, SECOND, SECOND):
        if holder == "number":
            a = c
        elif holder == "dict":
            a["c"] = c
        else:
            a[0] = c
        got = call(X, *extra, a, 1.0)
        want = expected(lambda x, a=a: fun(x, a, 1.0), X, *extra, engine="dual")
        for g, w in zip(got if adapter == "value_and_gradient" else [got],
                        want if adapter == "value_and_gradient" else [want]):
            assert_allclose(g, w, rtol=1e-13, atol=1e-14)
    assert call.prep.engine == "tape"
    assert call.prep.records == 1


def test_unchanged_state_is_not_recorded_again():
    # NaN equal to NaN, a tuple made anew of the same items, a new float of the same value
    box = {"nan": np.nan, "pair": (1.0, 2.0), "c": 1.5}

    def f(x):
        extra = 0.0 if np.isnan(box["nan"]) else 1.0
        return box["c"] * np.sum(x ** 2) + box["pair"][1] + extra

    prep = cyad.prepare_gradient(f, X)
    for _ in range(3):
        assert_allclose(cyad.gradient(f, X, prep=prep), 3.0 * X, rtol=1e-14)
        box["pair"] = (1.0, 2.0)
        box["c"] = float("1.5")
    assert prep.engine_state.traces == 1
    assert prep.engine_state.python_state.reads > 0


def test_a_state_too_large_to_watch_hands_f_to_the_dual_engine(monkeypatch):
    monkeypatch.setattr(cyad._tape.state, "BUDGET", 5)
    weights = [float(k) for k in range(10)]

    def f(x):
        return weights[3] * np.sum(x ** 2)

    prep = cyad.prepare_gradient(f, X)
    assert_allclose(cyad.gradient(f, X, prep=prep), 6.0 * X, rtol=1e-14)
    assert prep.engine_state.delegated
    assert "more Python state than a tape watches" in prep.engine_state.handed_over
    weights[3] = -1.0
    assert_allclose(cyad.gradient(f, X, prep=prep), -2.0 * X, rtol=1e-14)


def test_a_library_function_is_not_followed_into_its_module():
    # NumPy's own functions (np.sum is Python code) are not walked: their globals are not
    # the user's state, and a call compares a handful of reads
    w = np.arange(7.0)

    def f(x):
        return np.sum(w * x ** 2)

    prep = cyad.prepare_gradient(f, X)
    cyad.gradient(f, X, prep=prep)
    state = prep.engine_state.python_state
    assert state.complete and state.reads == 2      # the globals `np` and `w`
    assert [id(a) for a in state.arrays] == [id(w)]
    assert cyad._tape.state._library(np.sum.__module__)
    assert not cyad._tape.state._library(__name__)
    assert sys.modules[__name__].__file__


def test_a_method_accessed_anew_for_each_call_keeps_its_tape():
    # `model.loss` is a new bound method object at each access: the same function
    class Model:
        c = FIRST

        def loss(self, x):
            return self.c * np.sum(np.sin(x) * x)

    model = Model()
    prep = cyad.prepare_gradient(model.loss, X)
    for c in (FIRST, FIRST, SECOND):
        model.c = c
        expected = cyad.gradient(model.loss, X, engine="dual")
        assert_allclose(cyad.gradient(model.loss, X, prep=prep), expected, rtol=1e-13)
    assert prep.engine_state.traces == 2


def test_state_changed_before_every_call_warns_once_naming_it():
    class Problem:
        def __init__(self):
            self.history = []
            self.w = 2.0

        def loss(self, x):
            return self.w * np.sum(x ** 2)

    problem = Problem()
    prep = cyad.prepare_gradient(problem.loss, X)
    with pytest.warns(cyad.CyadWarning, match=r"len\(self\.history\).*engine='dual'") as seen:
        for k in range(12):
            problem.history.append(k)   # (as an optimiser's callback would)
            assert_allclose(cyad.gradient(problem.loss, X, prep=prep), 4.0 * X, rtol=1e-14)
    assert len(seen) == 1
    assert prep.engine_state.traces == 12


class _Unequal(float):
    # a number whose comparison raises
    def __eq__(self, other):
        raise RuntimeError("no comparison")

    __hash__ = float.__hash__


class _Unreadable:
    @property
    def __dict__(self):
        raise RuntimeError("no attributes")


def test_a_comparison_that_raises_counts_as_a_change():
    box = {"c": _Unequal(2.0)}

    def f(x):
        return float(box["c"]) * np.sum(x ** 2)

    prep = cyad.prepare_gradient(f, X)
    assert_allclose(cyad.gradient(f, X, prep=prep), 4.0 * X, rtol=1e-14)
    box["c"] = _Unequal(3.0)
    assert_allclose(cyad.gradient(f, X, prep=prep), 6.0 * X, rtol=1e-14)
    assert prep.engine == "tape" and prep.engine_state.traces == 2


def test_state_that_cannot_be_read_hands_f_to_the_dual_engine():
    box = {"c": _Unreadable()}

    def f(x):
        return 2.0 * np.sum(x ** 2) if box["c"] is not None else 0.0

    prep = cyad.prepare_gradient(f, X)
    assert_allclose(cyad.gradient(f, X, prep=prep), 4.0 * X, rtol=1e-14)
    assert prep.engine == "dual"
    assert "f reaches Python state it cannot compare" in prep.why_engine


def test_a_continuation_loop_with_the_same_adapters_follows_the_weight():
    # minimize again with the same cyad.scipy callables after changing a weight f reads out
    # of an array: every solve converges to that weight's minimiser
    optimize = pytest.importorskip("scipy.optimize")
    import cyad.scipy

    weights = np.array([1.0])
    target = np.linspace(-1.0, 1.0, 200)

    def objective(x):
        return 0.5 * np.sum((x - target) ** 2) + weights[0] * np.sum(np.log(np.cosh(x)))

    jac, hess = cyad.scipy.gradient(objective), cyad.scipy.hessian(objective)
    x = np.zeros_like(target)
    for weight in (0.5, 1.0, 2.0):
        weights[0] = weight
        res = optimize.minimize(objective, x, method="trust-exact", jac=jac, hess=hess)
        assert res.success
        # the stationarity condition of this weight: x - target + weight * tanh(x) = 0
        assert_allclose(res.x - target + weight * np.tanh(res.x), 0.0, atol=1e-5)
        x = res.x
    assert jac.prep.engine == hess.prep.engine == "tape"

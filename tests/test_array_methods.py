"""The ndarray surface the engines' array types share (cyad/_array_methods.pyx): every
method and operator on every engine, at first and second order, against JAX's array of the
same method; and each engine's type redefines only its fast paths and what reads values."""

import functools

import numpy as np
import pytest
from derivative_references import assert_matches, references
from scenarios import ENGINES

import cyad
from cyad._array_methods import ArrayMethods
from cyad._dual.array import Dual
from cyad._tape.trace import Tracer

pytestmark = pytest.mark.xdist_group("array_methods")

X = np.linspace(-0.9, 1.3, 12) + 0.05 * np.arange(12) ** 1.5

# a float result of each method on a (3, 4) array `a` (with t its flat input)
FLOAT_RESULTS = {
    "T": lambda a, t: a.T * t[:4, None],
    "reshape": lambda a, t: a.reshape(4, 3) + a.reshape((2, 6)).reshape(12)[:4, None],
    "ravel": lambda a, t: a.ravel() * t,
    "flatten": lambda a, t: a.flatten() ** 2,
    "transpose": lambda a, t: a.transpose() + a.transpose(1, 0),
    "squeeze": lambda a, t: a[None, :, 1:2].squeeze() * t[:3],
    "swapaxes": lambda a, t: a.swapaxes(0, 1) * t[:4, None],
    "copy": lambda a, t: a.copy() * a,
    "sum": lambda a, t: a.sum(axis=0) * a.sum(),
    "prod": lambda a, t: a.prod(axis=1),
    "mean": lambda a, t: a.mean(axis=1) * a.mean(),
    "var": lambda a, t: a.var(axis=0) + a.var(ddof=1),
    "std": lambda a, t: a.std(axis=1) + a.std(),
    "max": lambda a, t: a.max(axis=0) + a.max(),
    "min": lambda a, t: a.min(axis=1) * a.min(),
    "cumsum": lambda a, t: a.cumsum(axis=1) * a,
    "cumprod": lambda a, t: a.cumprod(axis=0),
    "dot": lambda a, t: a.dot(t[:4])[:, None] + a.dot(a.T).dot(a),
    "clip": lambda a, t: a.clip(-0.5, 1.0) * a,
    "trace": lambda a, t: a.trace() + a.trace(1) * a,
    "round": lambda a, t: a.round(1) * a,
    "diagonal": lambda a, t: a.diagonal(1) * a.diagonal(),
    "take": lambda a, t: a.take(np.array([0, 3]), axis=1) * a[:, :2],
    "repeat": lambda a, t: a[0].repeat(3) * t,
    "len and iteration": lambda a, t: sum(row * len(a) for row in a) + sum(reversed(list(a))),
    "+ - * / @": lambda a, t: (1.5 + a) * (a - 0.3) / (2.0 - a) - 0.7 / (a + 3.0) + 4.0 * a
                              - (a @ a.T) @ a + t[:3] @ a,
    "** and unary": lambda a, t: (a ** 3 + 2.0 ** a + abs(a) * (-a) + (+a)),
    "// % divmod": lambda a, t: (a // 0.4) * a + a % 0.4 + 1.0 // (a + 2.0) * a
                                + 3.0 % (a + 2.0) + divmod(a, 0.3)[1] * divmod(2.0, a + 3.0)[1],
}


def _in_place(a, t):
    b = a * 1.0
    b += t[:4]
    b -= a ** 2
    b *= a
    b /= 2.0 + a
    b **= 2
    b //= 0.5
    c = a * 1.0
    c %= 0.3
    return b * a + c


FLOAT_RESULTS["in-place operators"] = _in_place


def _program(method):
    def program(xp, t):
        a = t.reshape(3, 4)
        return (xp.sum(xp.sin(FLOAT_RESULTS[method](a, t))),)
    return program


@functools.cache
def _expected():
    found = references([(_program(m), X) for m in FLOAT_RESULTS])
    return dict(zip(FLOAT_RESULTS, found, strict=True))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("method", list(FLOAT_RESULTS))
def test_the_method_differentiates_as_jaxs(method, engine):
    (expected,) = _expected()[method]
    program = _program(method)
    f = lambda t: program(np, t)[0]   # noqa: E731
    assert_matches(cyad.gradient(f, X, engine=engine), expected.first, 1e-12, 1e-13, "gradient")
    assert_matches(cyad.hessian(f, X, engine=engine), expected.second, 1e-11, 1e-12, "hessian")


@pytest.mark.parametrize("engine", ENGINES)
def test_the_integer_methods_read_the_values(engine):
    a = X.reshape(3, 4)
    seen = {}

    def f(t):
        b = t.reshape(3, 4)
        seen.update(argmax=b.argmax(), argmin=b.argmin(axis=0), argsort=b.argsort(axis=1),
                    any=b.any(), all=(b > 0).all(axis=1))
        return np.sum(b[seen["argmin"], np.arange(4)] ** 2)

    grad = cyad.gradient(f, X, engine=engine)
    expected = {"argmax": a.argmax(), "argmin": a.argmin(axis=0), "argsort": a.argsort(axis=1),
                "any": a.any(), "all": (a > 0).all(axis=1)}
    for name, value in expected.items():
        np.testing.assert_array_equal(np.asarray(seen[name]), value, err_msg=name)
    rows = a.argmin(axis=0)
    np.testing.assert_array_equal(grad.reshape(3, 4), np.where(
        np.arange(3)[:, None] == rows, 2 * a, 0.0))


def test_each_engine_redefines_only_its_fast_paths():
    # (less what Cython gives every extension type: pickling hooks, its C-API capsule)
    shared = {name for name in vars(ArrayMethods) if "reduce" not in name
              and "setstate" not in name and not name.startswith("__pyx")} - {
        "__doc__", "__module__", "__new__", "described_as"}
    # the dual's arithmetic goes straight to the rule table; sum and copy skip the dispatch
    assert shared & set(vars(Dual)) == {
        "__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__",
        "__rmul__", "__imul__", "__truediv__", "__rtruediv__", "__itruediv__", "__pow__",
        "__rpow__", "__ipow__", "__matmul__", "__rmatmul__", "__neg__", "__pos__", "__abs__",
        "sum", "copy"}
    assert shared & set(vars(Tracer)) == set()

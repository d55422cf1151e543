"""Shared test scenarios: functions with independently known derivatives, in every form.

A scenario is a function f, a point x and f's value, first and second derivatives there,
computed analytically (or by JAX) without cyad. Every operator's answer follows from those
three tensors (`expected`), so the scenarios cross with

    operators x function kinds x engines x dtypes x (unprepared, prepared with out=)

in tests/test_scenarios.py, and the same scenarios feed the benchmarks (asv_bench). A new
engine is tested by adding its name to ENGINES; a new scenario by adding an entry here.

Function kinds: "python" (f(x)), "python_in_place" (f(y, x) writing y), "c" and
"c_in_place" (C functions through cyad's FunctionWrapper, where the scenario has them).
"""
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import reference_functions as ref
from rosenbrock import rosenbrock, rosenbrock_gradient, rosenbrock_hessian

ENGINES = ["dual", "tape"]
# engines that trace f: a C function is opaque to them, and refused
TRACING_ENGINES = {"tape"}

DTYPES = [np.float64, np.float32]
TOLERANCE = {np.float64: dict(rtol=1e-12, atol=1e-12), np.float32: dict(rtol=2e-4, atol=2e-4)}


@dataclass(frozen=True)
class Scenario:
    """f at x with its value, Jacobian (f.shape + x.shape) and second derivatives
    (f.shape + x.shape + x.shape; None where no second-order operator applies)."""
    name: str
    f: Callable
    x: np.ndarray
    value: Callable
    jacobian: Callable
    second: Callable | None = None
    # the other kinds of f: "python_in_place", "c", "c_in_place" -> a callable or wrapper
    kinds: dict[str, Any] = field(default_factory=dict)

    def function(self, kind):
        return self.f if kind == "python" else self.kinds[kind]

    @property
    def scalar_x(self):
        return self.x.ndim == 0

    @property
    def scalar_f(self):
        return np.ndim(self.value(self.x)) == 0


def _overwriting(f):
    """The two-argument form f(y, x) writing f(x) into y."""
    def f_in_place(y, x):
        y[...] = f(x)
    return f_in_place


# -- the scenarios ---------------------------------------------------------------------------

def _elementwise(x):
    return np.sin(x) * x**2 + 3.0


def _elementwise_jacobian(x):
    return np.diag(np.cos(x) * x**2 + 2 * x * np.sin(x))


def _matrix_product(x):
    # x is 2 x 3: f(X) = A @ X @ B, shape 4 x 2, linear
    return _A @ x @ _B


_A = np.linspace(-1.0, 1.0, 8).reshape(4, 2)
_B = np.linspace(0.5, 2.0, 6).reshape(3, 2)


def _matrix_product_jacobian(x):
    # d(A X B)[i, l] / dX[j, k] = A[i, j] B[k, l]
    return np.einsum("ij,kl->iljk", _A, _B)


def _quartic(x):
    # a scalar function of a 2-d x: sum(X * X)^2 / 2 + prod of X's first row
    return 0.5 * np.sum(x * x) ** 2 + x[0, 0] * x[0, 1] * x[0, 2]


def _quartic_gradient(x):
    g = 2.0 * np.sum(x * x) * x
    g[0, 0] += x[0, 1] * x[0, 2]
    g[0, 1] += x[0, 0] * x[0, 2]
    g[0, 2] += x[0, 0] * x[0, 1]
    return g


def _quartic_hessian(x):
    n = x.size
    flat = x.reshape(-1)
    h = 2.0 * np.sum(x * x) * np.eye(n) + 4.0 * np.outer(flat, flat)
    for a, b, c in ((0, 1, 2), (0, 2, 1), (1, 2, 0)):
        h[a, b] += flat[c]
        h[b, a] += flat[c]
    return h.reshape(x.shape + x.shape)


def _rhs_list(x):
    # an ODE right-hand side in solve_ivp's style: a list of scalars, one of them a constant
    a, b, c = x
    return [a * b - c**2 + 1.0, np.sin(b) * a, 2.0, c**3]


def _rhs_list_value(x):
    a, b, c = x
    return np.array([a * b - c**2 + 1.0, np.sin(b) * a, 2.0, c**3])


def _rhs_list_jacobian(x):
    a, b, c = x
    return np.array([[b, a, -2 * c], [np.sin(b), a * np.cos(b), 0], [0, 0, 0],
                     [0, 0, 3 * c**2]])


def _curve_tuple(t):
    # R -> R^(2 x 2) as a tuple of lists: stacked as np.asarray stacks it
    return ([t**2, np.sin(t)], [1.5, t * np.exp(t)])


def _curve_tuple_value(t):
    return np.array([[t**2, np.sin(t)], [1.5, t * np.exp(t)]])


def _curve_tuple_derivative(t):
    return np.array([[2 * t, np.cos(t)], [0, (1 + t) * np.exp(t)]])


def _curve_tuple_second(t):
    return np.array([[2.0, -np.sin(t)], [0, (2 + t) * np.exp(t)]])


def _point(n, seed=0):
    return np.random.default_rng(seed).uniform(0.2, 1.5, n)


def _c_kinds(name):
    return {"c": getattr(ref.C, name), "c_in_place": getattr(ref.C, name + "_in_place"),
            "python_in_place": getattr(ref.PYTHON, name + "_in_place")}


SCENARIOS = [
    # R^n -> R^n, Python and C (the C forms accumulate: y += F(x), so y starts at zero)
    Scenario("F", ref.PYTHON.F, _point(ref.N), ref.F_value, ref.F_jacobian,
             kinds=_c_kinds("F")),
    # R^n -> R, Python and C, first and second order
    Scenario("g", ref.PYTHON.g, _point(ref.N, 1), ref.g_value, ref.g_gradient,
             ref.g_hessian, kinds=_c_kinds("g")),
    # R -> R^3, Python and C, first and second order
    Scenario("h", ref.PYTHON.h, np.array(0.7), ref.h_value, ref.h_derivative,
             ref.h_second_derivative, kinds=_c_kinds("h")),
    Scenario("rosenbrock", rosenbrock, _point(11, 2), rosenbrock, rosenbrock_gradient,
             rosenbrock_hessian, kinds={"python_in_place": _overwriting(rosenbrock)}),
    Scenario("elementwise", _elementwise, _point(19, 3), _elementwise,
             _elementwise_jacobian, kinds={"python_in_place": _overwriting(_elementwise)}),
    Scenario("matrix product", _matrix_product, _point(6, 4).reshape(2, 3), _matrix_product,
             _matrix_product_jacobian,
             kinds={"python_in_place": _overwriting(_matrix_product)}),
    Scenario("quartic of a matrix", _quartic, _point(6, 5).reshape(2, 3), _quartic,
             _quartic_gradient, _quartic_hessian,
             kinds={"python_in_place": _overwriting(_quartic)}),
    # f returning a list or tuple: one array, stacked as np.asarray stacks it
    Scenario("list result", _rhs_list, _point(3, 6), _rhs_list_value, _rhs_list_jacobian,
             kinds={"python_in_place": _overwriting(_rhs_list)}),
    Scenario("tuple result", _curve_tuple, np.array(0.6), _curve_tuple_value,
             _curve_tuple_derivative, _curve_tuple_second,
             kinds={"python_in_place": _overwriting(_curve_tuple)}),
]


# -- operators and what each returns ---------------------------------------------------------

def _contract(t, v, x_ndim):
    """t . v over v's (x's) axes, which are t's last x_ndim axes."""
    return np.tensordot(t, v, axes=x_ndim) if x_ndim else t * v


def tangent(scenario, k=0):
    """A tangent of x's shape (k picks another)."""
    rng = np.random.default_rng(100 + k)
    return rng.uniform(-1.0, 1.0, scenario.x.shape)


def cotangent(scenario, k=0):
    """A cotangent of f's output shape (k picks another)."""
    rng = np.random.default_rng(200 + k)
    return rng.uniform(-1.0, 1.0, np.shape(scenario.value(scenario.x)))


@dataclass(frozen=True)
class Operator:
    name: str
    applies: Callable        # scenario -> whether the operator takes it
    takes_tangent: bool      # pushforward-like: f, x, dx (pullback: f, x, dy)
    expected: Callable       # (scenario, x, dx or None) -> result (a tuple for value_and_*)
    cotangent: bool = False  # the tangent is shaped like f(x) (pullback's dy)


def _value(s, x):
    return np.asarray(s.value(x), np.float64)


def _first(s, x):
    return np.asarray(s.jacobian(x), np.float64)


def _second(s, x):
    return np.asarray(s.second(x), np.float64)


def _pushed(s, x, dx):
    return _contract(_first(s, x), dx, x.ndim)


def _pulled(s, x, dy):
    # dy . J over f's axes, J's first ones
    return np.tensordot(dy, _first(s, x), axes=dy.ndim)


def _hvp(s, x, v):
    return _contract(_second(s, x), v, x.ndim)


def _any(s):
    return True


def _scalar_x(s):
    return s.scalar_x


def _scalar_f(s):
    return s.scalar_f


def _second_scalar_x(s):
    return s.scalar_x and s.second is not None


def _second_scalar_f(s):
    return s.scalar_f and s.second is not None


OPERATORS = [
    Operator("pushforward", _any, True, lambda s, x, dx: _pushed(s, x, dx)),
    Operator("value_and_pushforward", _any, True,
             lambda s, x, dx: (_value(s, x), _pushed(s, x, dx))),
    Operator("pullback", _any, True, lambda s, x, dy: _pulled(s, x, dy), cotangent=True),
    Operator("value_and_pullback", _any, True,
             lambda s, x, dy: (_value(s, x), _pulled(s, x, dy)), cotangent=True),
    Operator("derivative", _scalar_x, False, lambda s, x, _: _first(s, x)),
    Operator("value_and_derivative", _scalar_x, False,
             lambda s, x, _: (_value(s, x), _first(s, x))),
    Operator("gradient", _scalar_f, False, lambda s, x, _: _first(s, x)),
    Operator("value_and_gradient", _scalar_f, False,
             lambda s, x, _: (_value(s, x), _first(s, x))),
    Operator("jacobian", _any, False, lambda s, x, _: _first(s, x)),
    Operator("value_and_jacobian", _any, False, lambda s, x, _: (_value(s, x), _first(s, x))),
    Operator("second_derivative", _second_scalar_x, False, lambda s, x, _: _second(s, x)),
    Operator("value_derivative_and_second_derivative", _second_scalar_x, False,
             lambda s, x, _: (_value(s, x), _first(s, x), _second(s, x))),
    Operator("hvp", _second_scalar_f, True, lambda s, x, v: _hvp(s, x, v)),
    Operator("gradient_and_hvp", _second_scalar_f, True,
             lambda s, x, v: (_first(s, x), _hvp(s, x, v))),
    Operator("hessian", _second_scalar_f, False, lambda s, x, _: _second(s, x)),
    Operator("value_gradient_and_hessian", _second_scalar_f, False,
             lambda s, x, _: (_value(s, x), _first(s, x), _second(s, x))),
]


def cases():
    """(scenario, operator, kind) for every combination that applies."""
    return [(s, op, kind) for s in SCENARIOS for op in OPERATORS if op.applies(s)
            for kind in ["python", *s.kinds]]

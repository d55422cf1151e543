"""cyad.hvp and cyad.gradient_and_hvp: Hessian-vector products of scalar-valued functions.

Functions (the `function` parameter), as in hessian.py:
- "rosenbrock": the chained Rosenbrock function, a Python function
- "elementwise": sum(sin(x) * exp(-x**2) + x**3), a Python function
- "C rosenbrock": Rosenbrock as a C function (examples/cython's rosenbrock_function()); skipped
  when that example is not installed or has no second-order function (`common.c_rosenbrock`)

One tangent v. Forward over forward, H @ v takes the n basis directions at the inner level and
v at the outer one: its cost grows with n like a gradient's, not like a Hessian's.
"""
import numpy as np

from .common import CALLS, Call, Operator, c_rosenbrock, output
from .gradient import rosenbrock_by_hand
from .hessian import PYTHON_FUNCTIONS, elementwise_terms, rosenbrock_hessian_terms

HVP_SIZES = [10, 100, 1_000]


def rosenbrock_hvp_by_hand(x, v, gradient, product):
    """gradient <- ∇f, product <- ∇²f v from the tridiagonal terms: no n × n matrix."""
    rosenbrock_by_hand(x, gradient)
    main, off = rosenbrock_hessian_terms(x)
    np.multiply(main, v, out=product)
    product[:-1] += off * v[1:]
    product[1:] += off * v[:-1]


def elementwise_hvp_by_hand(x, v, gradient, product):
    """gradient <- g'(x), product <- g''(x) v."""
    _, first, second = elementwise_terms(x)
    np.copyto(gradient, first)
    np.multiply(second, v, out=product)


BY_HAND = {"rosenbrock": rosenbrock_hvp_by_hand, "elementwise": elementwise_hvp_by_hand}


def inputs(n):
    return np.linspace(-1.0, 1.5, n), np.linspace(1.0, 2.0, n)


class Hvp(Operator):
    operator = "hvp"
    params = [HVP_SIZES, CALLS, ["rosenbrock", "elementwise", "C rosenbrock"]]
    param_names = ["n", "call", "function"]

    def setup(self, n, call, function):
        x, v = inputs(n)
        if function == "C rosenbrock":
            f = c_rosenbrock(self.operator, x, v)
        else:
            f = PYTHON_FUNCTIONS[function]
        self.operator_call(call, f, x, v)


class GradientAndHvp(Hvp):
    operator = "gradient_and_hvp"


class Baseline(Call):
    """Without cyad: the primal alone, or gradient and Hessian-vector product written by hand
    in NumPy."""

    params = [HVP_SIZES, ["rosenbrock", "elementwise"], ["primal", "by hand"]]
    param_names = ["n", "function", "computes"]

    def setup(self, n, function, computes):
        x, v = inputs(n)
        if computes == "primal":
            primal = PYTHON_FUNCTIONS[function]
            self.call = lambda: primal(x)
        else:
            by_hand, gradient, product = BY_HAND[function], output(n), output(n)
            self.call = lambda: by_hand(x, v, gradient, product)

"""cyad.hessian and cyad.value_gradient_and_hessian of scalar-valued functions.

Functions (the `function` parameter):
- "rosenbrock": the chained Rosenbrock function of gradient.py, a Python function (its
  Hessian is tridiagonal; cyad computes it dense)
- "elementwise": sum(sin(x) * exp(-x**2) + x**3), a Python function heavy in elementwise
  rules (its Hessian is diagonal)
- "C rosenbrock": Rosenbrock as a C function (examples/cython's rosenbrock_function()); skipped
  when that example is not installed or has no second-order function (`common.c_rosenbrock`)

The result is n × n, computed forward over forward in about n**2 / 2 second-order terms.
"""
import numpy as np

from .common import CALLS, Call, Operator, c_rosenbrock, output
from .gradient import inputs, rosenbrock, rosenbrock_by_hand
from .jacobian import diagonal

HESSIAN_SIZES = [10, 30, 100]


def elementwise(x):
    return np.sum(np.sin(x) * np.exp(-x**2) + x**3)


def elementwise_terms(x):
    """g(x), g'(x) and g''(x) of g = sin(x) exp(-x²) + x³, elementwise:
    g' = (cos x - 2x sin x) exp(-x²) + 3x²
    g'' = ((4x² - 3) sin x - 4x cos x) exp(-x²) + 6x"""
    s, c, e, x2 = np.sin(x), np.cos(x), np.exp(-x**2), x**2
    first = (c - 2.0 * x * s) * e + 3.0 * x2
    second = ((4.0 * x2 - 3.0) * s - 4.0 * x * c) * e + 6.0 * x
    return s * e + x2 * x, first, second


def rosenbrock_hessian_terms(x):
    """The Hessian's diagonal, 1200 x_i² - 400 x_(i+1) + 2 [i < n-1] + 200 [i > 0], and its
    off-diagonal -400 x_i at (i, i+1) and (i+1, i)."""
    head = x[:-1]
    main = np.zeros_like(x)
    main[:-1] = 1200.0 * head**2 - 400.0 * x[1:] + 2.0
    main[1:] += 200.0
    return main, -400.0 * head


def rosenbrock_hessian_by_hand(x, gradient, hessian):
    """The value, gradient <- ∇f and hessian <- ∇²f (tridiagonal, written densely)."""
    n = x.size
    value = rosenbrock_by_hand(x, gradient)
    main, off = rosenbrock_hessian_terms(x)
    hessian.fill(0.0)
    diagonal(hessian)[...] = main
    flat = hessian.reshape(-1)
    flat[1 :: n + 1] = off          # (i, i+1)
    flat[n :: n + 1] = off          # (i+1, i)
    return value


def elementwise_hessian_by_hand(x, gradient, hessian):
    """The value, gradient <- g'(x) and hessian <- diag(g''(x))."""
    g, first, second = elementwise_terms(x)
    np.copyto(gradient, first)
    hessian.fill(0.0)
    diagonal(hessian)[...] = second
    return np.sum(g)


PYTHON_FUNCTIONS = {"rosenbrock": rosenbrock, "elementwise": elementwise}
BY_HAND = {"rosenbrock": rosenbrock_hessian_by_hand, "elementwise": elementwise_hessian_by_hand}


class Hessian(Operator):
    operator = "hessian"
    params = [HESSIAN_SIZES, CALLS, ["rosenbrock", "elementwise", "C rosenbrock"]]
    param_names = ["n", "call", "function"]

    def setup(self, n, call, function):
        x = inputs(n)
        if function == "C rosenbrock":
            f = c_rosenbrock(self.operator, x)
        else:
            f = PYTHON_FUNCTIONS[function]
        self.operator_call(call, f, x)


class ValueGradientAndHessian(Hessian):
    operator = "value_gradient_and_hessian"


class Baseline(Call):
    """Without cyad: the primal alone, or value, gradient and Hessian written by hand in NumPy."""

    params = [HESSIAN_SIZES, ["rosenbrock", "elementwise"], ["primal", "by hand"]]
    param_names = ["n", "function", "computes"]

    def setup(self, n, function, computes):
        x = inputs(n)
        if computes == "primal":
            primal = PYTHON_FUNCTIONS[function]
            self.call = lambda: primal(x)
        else:
            by_hand, gradient, hessian = BY_HAND[function], output(n), output((n, n))
            self.call = lambda: by_hand(x, gradient, hessian)

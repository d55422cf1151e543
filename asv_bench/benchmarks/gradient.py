"""cyad.gradient and cyad.value_and_gradient of the chained Rosenbrock function.

The function: sum(100 (x[1:] - x[:-1]**2)**2 + (1 - x[:-1])**2), a Python function. No C
function is benchmarked: the only one cyad ships (the copy in cyad._reporting.profile) has as many
outputs as inputs, and a gradient needs a scalar output.
"""
import numpy as np

from .common import CALLS, SIZES, Call, Operator, output, skip


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def rosenbrock_by_hand(x, gradient):
    """The value, and gradient <- ∇f: -400 x_i d_i - 2 (1 - x_i) + 200 d_(i-1).

    (d = x[1:] - x[:-1]².)
    """
    head = x[:-1]
    d = x[1:] - head**2
    np.multiply(-400.0 * head, d, out=gradient[:-1])
    gradient[:-1] -= 2.0 * (1.0 - head)
    gradient[-1] = 0.0
    gradient[1:] += 200.0 * d
    return np.sum(100.0 * d**2 + (1.0 - head) ** 2)


def inputs(n):
    return np.linspace(-1.0, 1.5, n)


class Gradient(Operator):
    operator = "gradient"
    params = [SIZES, CALLS]
    param_names = ["n", "call"]

    def setup(self, n, call):
        if n >= 10_000:
            skip("forward mode needs n / chunk = 1250 evaluations of f: seconds per call")
        self.operator_call(call, rosenbrock, inputs(n))


class ValueAndGradient(Gradient):
    operator = "value_and_gradient"


class Baseline(Call):
    """Without cyad: the primal alone, or value and gradient written by hand in NumPy."""

    params = [SIZES, ["primal", "by hand"]]
    param_names = ["n", "computes"]

    def setup(self, n, computes):
        x, gradient = inputs(n), output(n)
        if computes == "primal":
            self.call = lambda: rosenbrock(x)
        else:
            self.call = lambda: rosenbrock_by_hand(x, gradient)

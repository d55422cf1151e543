"""cyad.pushforward and cyad.value_and_pushforward of elementwise functions.

Functions (the `function` parameter):
- "copy": f(y, x): y[...] = x, a Python function
- "C copy": the same copy as a C function of cyad's signature (cyad._profile.copy_function())
- "elementwise": sin(x) * exp(-x**2) + x**3, a Python function
"""
import numpy as np

from .common import CALLS, COPIES, ELEMENTWISE_SIZES, Call, Operator, copy, output


def elementwise(x):
    return np.sin(x) * np.exp(-x**2) + x**3


def elementwise_by_hand(x, dx, value, tangent):
    """value <- sin(x) exp(-x²) + x³, tangent <- ((cos x - 2x sin x) exp(-x²) + 3x²) dx."""
    s, e, x2 = np.sin(x), np.exp(-x**2), x**2
    np.add(s * e, x2 * x, out=value)
    np.multiply((np.cos(x) - 2.0 * x * s) * e + 3.0 * x2, dx, out=tangent)


def copy_by_hand(x, dx, value, tangent):
    """value <- x, tangent <- dx."""
    np.copyto(value, x)
    np.copyto(tangent, dx)


def inputs(n):
    return np.linspace(0.1, 1.0, n), np.linspace(1.0, 2.0, n)


class Pushforward(Operator):
    operator = "pushforward"
    params = [ELEMENTWISE_SIZES, CALLS, ["copy", "C copy", "elementwise"]]
    param_names = ["n", "call", "function"]

    def setup(self, n, call, function):
        x, dx = inputs(n)
        if function == "elementwise":
            self.operator_call(call, elementwise, x, dx)
        else:
            self.operator_call(call, COPIES[function], x, dx, y=np.zeros(n))


class ValueAndPushforward(Pushforward):
    operator = "value_and_pushforward"


class Baseline(Call):
    """Without cyad: the primal alone, or value and pushforward written by hand in NumPy."""

    params = [ELEMENTWISE_SIZES, ["copy", "elementwise"], ["primal", "by hand"]]
    param_names = ["n", "function", "computes"]

    def setup(self, n, function, computes):
        x, dx = inputs(n)
        value, tangent = output(n), output(n)
        if function == "copy":
            primal, by_hand = (lambda x: copy(value, x)), copy_by_hand
        else:
            primal, by_hand = elementwise, elementwise_by_hand
        if computes == "primal":
            self.call = lambda: primal(x)
        else:
            self.call = lambda: by_hand(x, dx, value, tangent)

"""cyad.pushforward and cyad.value_and_pushforward of elementwise functions.

Functions (the `function` parameter):
- "copy": f(y, x): y[...] = x, a Python function
- "C copy": the same copy as a C function of cyad's signature
  (cyad._reporting.profile.copy_function())
- "elementwise": sin(x) * exp(-x**2) + x**3, a Python function
"""
import numpy as np

import cyad
import cyad._reporting.profile

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


class NogilLoop:
    """The C copy's prepared pushforward from a nogil Cython loop (python -m cyad's "nogil
    Cython loop" rows): seconds per call of cyad's entry point, and of the same copies by
    hand through a function pointer, the fastest of a few loops of 10 000 calls."""

    params = [[10, 100], ["pushforward", "value_and_pushforward"]]
    param_names = ["n", "operator"]

    def setup(self, n, operator):
        x, dx, y = inputs(n)[0], inputs(n)[1], np.zeros(n)
        prep = cyad.prepare_pushforward(cyad._reporting.profile.copy_function(), x, dx, y=y)
        copy_times = cyad._reporting.profile.nogil_copy_times
        self.loop = lambda: copy_times(prep, x, dx, y, output(n), output(n), operator, 10_000)

    def track_entry_point(self, n, operator):
        return min(self.loop()[0] for _ in range(5))

    def track_by_hand(self, n, operator):
        return min(self.loop()[1] for _ in range(5))

    track_entry_point.unit = track_by_hand.unit = "seconds"

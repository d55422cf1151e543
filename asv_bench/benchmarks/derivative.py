"""cyad.derivative and cyad.value_and_derivative of a function of a scalar with n outputs.

The function: damped modes exp(-k t) * cos(w t) at a scalar t, with k and w of size n, a
Python function. No C function is benchmarked: the only one cyad ships (the copy in
cyad._reporting.profile) maps n inputs to n outputs, and a derivative has a single input.
"""
import numpy as np

from .common import CALLS, SIZES, Call, Operator, output

T = 0.3


def modes_of(n):
    """The damped modes of n frequencies as a function of t."""
    k, w = np.linspace(0.1, 1.0, n), np.linspace(1.0, 10.0, n)

    def modes(t):
        return np.exp(-k * t) * np.cos(w * t)

    def by_hand(t, value, derivative):
        """value <- exp(-k t) cos(w t), derivative <- -exp(-k t) (k cos(w t) + w sin(w t))."""
        e, c = np.exp(-k * t), np.cos(w * t)
        np.multiply(e, c, out=value)
        np.multiply(-e, k * c + w * np.sin(w * t), out=derivative)

    return modes, by_hand


class Derivative(Operator):
    operator = "derivative"
    params = [SIZES, CALLS]
    param_names = ["n", "call"]

    def setup(self, n, call):
        modes, _ = modes_of(n)
        self.operator_call(call, modes, T)


class ValueAndDerivative(Derivative):
    operator = "value_and_derivative"


class Baseline(Call):
    """Without cyad: the primal alone, or value and derivative written by hand in NumPy."""

    params = [SIZES, ["primal", "by hand"]]
    param_names = ["n", "computes"]

    def setup(self, n, computes):
        modes, by_hand = modes_of(n)
        value, derivative = output(n), output(n)
        if computes == "primal":
            self.call = lambda: modes(T)
        else:
            self.call = lambda: by_hand(T, value, derivative)

"""This machine's memory bandwidth, and the large tape programs as a fraction of it.

`Add`: STREAM's Add kernel, a = b + c over n float64 numbers (NumPy's one loop: two streams
read, one written, 24 bytes per element), its bandwidth in GB/s. `Programs`: a prepared tape
call with out= of a program over n elements, and the fraction of that bandwidth it reaches,
counting only the bytes no program can avoid (its floor): Rosenbrock's gradient reads x and
writes the gradient (16 bytes per element), the JVP of sin(x) exp(-x**2) + x**3 reads x and
the tangent and writes the tangent out (24). A fraction of 1 is the physical floor; JAX's
fused programs come close to it. Both are measured at the same n in one setup (at 10**6
the arrays of one call fit in a large L3, at 10**7 they stream from memory).
"""
import timeit

import numpy as np

import cyad

from .common import Call
from .gradient import inputs, rosenbrock

BANDWIDTH_SIZES = [100_000, 1_000_000, 10_000_000]


def best_seconds(call, repeats=7):
    """The least time of one call over `repeats` timings of enough calls for 20 ms."""
    count, _ = timeit.Timer(call).autorange()
    count = max(1, count // 10)
    return min(timeit.repeat(call, number=count, repeat=repeats)) / count


def add_bandwidth(n):
    """STREAM's Add over n float64 numbers: bytes per second."""
    b, c, a = np.ones(n), np.ones(n), np.empty(n)
    return 24 * n / best_seconds(lambda: np.add(b, c, out=a))


def elementwise(x):
    return np.sin(x) * np.exp(-x**2) + x**3


class Add:
    params = [BANDWIDTH_SIZES]
    param_names = ["n"]

    def track_bandwidth(self, n):
        return add_bandwidth(n) / 1e9

    track_bandwidth.unit = "GB/s"


class Programs(Call):
    params = [BANDWIDTH_SIZES, ["rosenbrock gradient", "elementwise jvp"]]
    param_names = ["n", "program"]

    def setup(self, n, program):
        x = inputs(n)
        out = np.empty(n)
        if program == "rosenbrock gradient":
            prep = cyad.prepare_gradient(rosenbrock, x, engine="tape")
            self.floor = 16 * n

            def call():
                cyad.gradient(rosenbrock, x, prep=prep, out=out)
        else:
            dx = np.ones(n)
            prep = cyad.prepare_pushforward(elementwise, x, dx, engine="tape")
            self.floor = 24 * n

            def call():
                cyad.pushforward(elementwise, x, dx, prep=prep, out=out)
        call()
        self.call = call

    def track_fraction_of_bandwidth(self, n, program):
        return self.floor / best_seconds(self.call) / add_bandwidth(n)

    track_fraction_of_bandwidth.unit = "fraction"

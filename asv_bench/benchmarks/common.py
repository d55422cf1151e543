"""What the benchmark modules share: sizes, the calls under test and their three measurements.

A benchmark class's `setup` builds `self.call`, a function of no arguments making one call;
`Call` times it (`time_call`), measures the peak memory of the process making it
(`peakmem_call`) and counts its allocator requests (`track_allocations`).
"""
import abc
import time

import numpy as np

import cyad
import cyad._reporting.profile

SIZES = [10, 100, 1_000, 10_000]
ELEMENTWISE_SIZES = SIZES + [100_000, 1_000_000]

# "prepared": prep= and out= made once in setup, the call a program makes in its inner loop
# (it makes no heap allocation); "unprepared": the bare call, which prepares, evaluates and
# allocates its result every time.
CALLS = ["prepared", "unprepared"]


def skip(reason):
    """Leave out one combination of parameters (asv's convention: NotImplementedError)."""
    raise NotImplementedError(reason)


class Call(abc.ABC):
    """Time, peak memory and allocations per call of `self.call()`, which `setup` builds."""

    @abc.abstractmethod
    def setup(self, *params):
        """Set self.call for one combination of self.params."""

    def time_call(self, *params):
        self.call()

    def peakmem_call(self, *params):
        self.call()

    def track_allocations(self, *params):
        return allocations_per_call(self.call)

    track_allocations.unit = "allocations"


class Operator(Call):
    """A call of `cyad.<operator>`; `setup` passes the problem to `operator_call`."""

    operator = None   # e.g. "value_and_jacobian"

    def operator_call(self, call, f, x, dx=None, *, y=None):
        """Set self.call to the `call` ("prepared" or "unprepared") of the operator on f at x.

        The calls are spelled out: unpacking *args would allocate a tuple in every call.
        """
        run = getattr(cyad, self.operator)
        if call == "unprepared":
            if dx is None:
                self.call = lambda: run(f, x, y=y)
            else:
                self.call = lambda: run(f, x, dx, y=y)
            return
        prepare = getattr(cyad, f"prepare_{self.operator}")
        if dx is None:
            prep = prepare(f, x, y=y)
            out = buffers_like(run(f, x, y=y, prep=prep))
            self.call = lambda: run(f, x, y=y, prep=prep, out=out)
        else:
            prep = prepare(f, x, dx, y=y)
            out = buffers_like(run(f, x, dx, y=y, prep=prep))
            self.call = lambda: run(f, x, dx, y=y, prep=prep, out=out)


def buffers_like(result):
    """out= buffers for an operator's result: copies (0-d for a float, tuples for pairs)."""
    if isinstance(result, tuple):
        return tuple(buffers_like(r) for r in result)
    return np.array(result)


def output(shape):
    """A buffer for results by hand, its memory touched now rather than in the first timed call
    (np.empty and np.zeros only reserve the pages of a large array)."""
    return np.full(shape, np.nan)


def allocations_per_call(call, seconds=0.2):
    """cyad.allocations_per_call with as many calls (at most 1000) as fit in about `seconds`."""
    start = time.perf_counter()
    call()
    elapsed = time.perf_counter() - start
    calls = max(1, min(1000, int(seconds / 3 / max(elapsed, 1e-9))))
    return cyad.allocations_per_call(call, calls)


def copy(y, x):
    """f(y, x): y[...] = x, the function of cyad's profiling experiment (`python -m cyad`)."""
    y[...] = x


# The copy as a Python function and as the C function of cyad's signature in
# cyad._reporting.profile.
COPIES = {"copy": copy, "C copy": cyad._reporting.profile.copy_function()}


def c_rosenbrock(operator, *args):
    """The C Rosenbrock of examples/cython (cyad_examples.rosenbrock_function()) for a
    second-order `operator` at args (x, or x and the tangent), or skip when it cannot serve.

    cyad ships no scalar-valued C function, so this one is taken from the example project when
    it is installed in the benchmarked environment (`pip install --no-build-isolation
    examples/cython`), and used only if it carries a second-order function.
    """
    try:
        import cyad_examples
    except ImportError:
        skip("examples/cython is not installed (pip install --no-build-isolation examples/cython)")
    f = cyad_examples.rosenbrock_function()
    try:
        getattr(cyad, f"prepare_{operator}")(f, *args)
    except TypeError as error:
        if "second-order" in str(error):
            skip(str(error))
        raise
    return f

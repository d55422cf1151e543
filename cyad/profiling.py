"""Measure a prepared cyad call: its time distribution and its allocations per call.

    >>> import numpy as np, cyad
    >>> p = cyad.profile("jacobian", lambda x: np.sin(x) * x, np.linspace(0, 1, 10), seconds=0.05)
    >>> p.evaluations, p.path
    (1, 'python')

`profile` prepares the operator for the function and inputs it is given, allocates
the `out=` buffers, and times the prepared in-place call: the call a program makes
in its inner loop. The allocations it reports are requests to Python's and NumPy's
allocators per call (see `allocations_per_call`); a function whose own body
allocates shows its allocations here too, each evaluation of it counted.
"""
import dataclasses
import time

import numpy as np

import cyad
from cyad._profile import count_allocations

OPERATORS = ("pushforward", "value_and_pushforward", "derivative", "value_and_derivative",
             "gradient", "value_and_gradient", "jacobian", "value_and_jacobian")


def allocations_per_call(fn, calls=1000):
    """Allocator requests per call of fn, counted at two loop lengths and subtracted.

    Every request to CPython's allocators (raw, mem and object domains) and to NumPy's
    array data handler counts, even when a cache serves it; requests made once (a
    first call, a lazily built table) cancel out.
    """
    fn()
    return (count_allocations(fn, 2 * calls) - count_allocations(fn, calls)) / calls


@dataclasses.dataclass
class Profile:
    """The measured distribution of one prepared call (all times in seconds per call)."""

    label: str
    times: np.ndarray            # per-call time of every sample
    calls_per_sample: int
    allocations: float           # per call
    evaluations: int             # evaluations of f per operator call
    chunk: int
    width: int
    path: str                    # "python": f ran on dual arrays; "c": a C function

    @property
    def samples(self):
        return len(self.times)

    @property
    def min(self):
        return float(np.min(self.times))

    @property
    def median(self):
        return float(np.median(self.times))

    @property
    def mean(self):
        return float(np.mean(self.times))

    @property
    def max(self):
        return float(np.max(self.times))

    def as_dict(self):
        return {"label": self.label, "samples": self.samples,
                "calls_per_sample": self.calls_per_sample, "min": self.min,
                "median": self.median, "mean": self.mean, "max": self.max,
                "allocations": self.allocations, "evaluations": self.evaluations,
                "chunk": self.chunk, "width": self.width, "path": self.path}

    def __str__(self):
        return (f"{self.label}: {self.samples} samples with {self.calls_per_sample} evaluations\n"
                f"  min {format_time(self.min)}, median {format_time(self.median)}, "
                f"mean {format_time(self.mean)}, max {format_time(self.max)}; "
                f"{format_count(self.allocations)} allocations per call\n"
                f"  f evaluated {self.evaluations} time(s) per call, chunk {self.chunk} "
                f"({self.width} lanes), {'Python dual arrays' if self.path == 'python' else 'C-level'}")


def format_time(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_count(count):
    return f"{count:.0f}" if count == round(count) else f"{count:.3g}"


def time_samples(fn, seconds=1.0, max_samples=10_000):
    """Per-call times of fn: samples of `calls` calls each, for about `seconds`.

    `calls` is chosen so one sample lasts at least ~20 microseconds (clock resolution).
    """
    def run(calls):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return time.perf_counter() - t0

    fn()
    calls, start = 1, time.perf_counter()
    # the best of three, so that one interruption does not fix the sample size
    while min(run(calls) for _ in range(3)) < 2e-5 and calls < 1 << 20:
        calls *= 2
    times = []
    deadline = start + seconds
    while (time.perf_counter() < deadline or len(times) < 3) and len(times) < max_samples:
        times.append(run(calls) / calls)
    return np.array(times), calls


def profile(operator, f, x, dx=None, *, y=None, chunk=None, seconds=1.0, label=None):
    """Time and count allocations of the prepared in-place call of an operator.

    Parameters
    ----------
    operator : str
        One of cyad's first-order operators, e.g. "jacobian" or "value_and_pushforward".
    f : callable or FunctionWrapper
        The function, ``f(x)`` or ``f(y, x)`` (with ``y=``).
    x : array_like or float
    dx : array_like or tuple, optional
        The tangent(s), for pushforward operators.
    y : ndarray, optional
        The output buffer of a two-argument f.
    chunk : int, optional
    seconds : float
        How long to sample the time for.
    label : str, optional

    Returns
    -------
    Profile
    """
    if operator not in OPERATORS:
        raise ValueError(f"cyad: no operator {operator!r}; choose one of {', '.join(OPERATORS)}")
    family = operator.removeprefix("value_and_")
    run = getattr(cyad, operator)
    extra = (dx,) if family == "pushforward" else ()
    if family == "pushforward" and dx is None:
        raise ValueError("cyad: a pushforward needs dx")
    prep = getattr(cyad, f"prepare_{family}")(f, x, *extra, y=y, chunk=chunk)
    out = _buffers_like(run(f, x, *extra, y=y, prep=prep))   # also learns f's output
    if family == "pushforward":   # spelled out: a call with *args would allocate its tuple
        def call():
            return run(f, x, dx, y=y, prep=prep, out=out)
    else:
        def call():
            return run(f, x, y=y, prep=prep, out=out)
    times, calls = time_samples(call, seconds)
    allocations = allocations_per_call(call)
    return Profile(label or f"{operator} of {getattr(f, '__name__', type(f).__name__)}",
                   times, calls, allocations, prep.evaluations, prep.chunk, prep.width,
                   "python" if prep.is_python else "c")


def _buffers_like(result):
    # out= buffers for a result: arrays (0-d for floats), tuples of them for pairs and batches
    if isinstance(result, tuple):
        return tuple(_buffers_like(r) for r in result)
    return np.empty_like(np.asarray(result))

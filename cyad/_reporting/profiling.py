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
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

import cyad
from cyad._reporting.profile import count_allocations

if TYPE_CHECKING:
    import numpy.typing as npt

    from cyad._wrapper import FunctionWrapper

OPERATORS = ("pushforward", "value_and_pushforward", "pullback", "value_and_pullback",
             "derivative", "value_and_derivative", "gradient", "value_and_gradient", "jacobian",
             "value_and_jacobian")
# the families whose operators take tangents (pushforward) or cotangents (pullback)
_SEEDED = ("pushforward", "pullback")


def allocations_per_call(fn: Callable[[], object], calls: int = 1000) -> float:
    """Allocator requests per call of fn, counted at two loop lengths and subtracted.

    Every request to CPython's allocators (raw, mem and object domains) and to NumPy's
    array data handler counts, even when a cache serves it; requests made once (a
    first call, a lazily built table) cancel out. Only the calling thread's requests
    count, and those of cyad's pool threads (the parts of a call), not another
    thread's that runs meanwhile.

    Parameters
    ----------
    fn : callable
        Called without arguments, ``1 + 3 * calls`` times.
    calls : int, optional
        The shorter of the two loop lengths.

    Returns
    -------
    float
        Requests per call of fn.

    Examples
    --------
    >>> cyad.allocations_per_call(lambda: None)
    0.0
    >>> cyad.allocations_per_call(lambda: np.empty(3)) > 0
    True

    A prepared call with ``out=`` saves the allocations of preparing each call:

    >>> f, x, out = (lambda x: np.sum(x ** 2)), np.ones(3), np.empty(3)
    >>> prep = cyad.prepare_gradient(f, x)
    >>> (cyad.allocations_per_call(lambda: cyad.gradient(f, x, prep=prep, out=out))
    ...  < cyad.allocations_per_call(lambda: cyad.gradient(f, x)))
    True
    """
    fn()
    return (count_allocations(fn, 2 * calls) - count_allocations(fn, calls)) / calls


@dataclasses.dataclass
class Profile:
    """The measured distribution of one prepared call (all times in seconds per call).

    Made by `profile`; ``str()`` gives a short report.

    Parameters
    ----------
    label : str
        What was measured.
    times : ndarray
        The per-call time of every sample.
    calls_per_sample : int
        Calls timed together in one sample.
    allocations : float
        Allocator requests per call (see `allocations_per_call`).
    evaluations : int
        Evaluations of f per operator call (0 for a tape's replay, which does not
        evaluate f).
    chunk, width : int
        The prep's chunk and lanes.
    path : str
        "python" when f ran on dual arrays, "c" for a C function, "replay" for a tape
        replayed in compiled code.
    work : str, optional
        What one call does, as the prep says (`Prep.work`).

    Attributes
    ----------
    samples : int
        The number of samples.
    min, median, mean, max : float
        Statistics of `times`.

    Examples
    --------
    >>> p = cyad.Profile("f", np.array([2e-6, 1e-6, 3e-6]), 100, 0.0, 1, 4, 4, "python")
    >>> p.samples, p.median, p.as_dict()["max"]
    (3, 2e-06, 3e-06)
    >>> print(p)
    f: 3 samples with 100 evaluations
      min 1 us, median 2 us, mean 2 us, max 3 us; 0 allocations per call
      f evaluated 1 time(s) per call, chunk 4 (4 lanes), Python dual arrays
    """

    label: str
    times: npt.NDArray[np.float64]   # per-call time of every sample
    calls_per_sample: int
    allocations: float           # per call
    evaluations: int             # evaluations of f per operator call
    chunk: int
    width: int
    path: str                    # "python": f ran on dual arrays; "c": a C function;
    # "replay": a tape replayed
    work: str = ""

    @property
    def samples(self) -> int:
        """The number of samples."""
        return len(self.times)

    @property
    def min(self) -> float:
        """The shortest time per call."""
        return float(np.min(self.times))

    @property
    def median(self) -> float:
        """The median time per call."""
        return float(np.median(self.times))

    @property
    def mean(self) -> float:
        """The mean time per call."""
        return float(np.mean(self.times))

    @property
    def max(self) -> float:
        """The longest time per call."""
        return float(np.max(self.times))

    def as_dict(self) -> dict[str, Any]:
        """The label, the statistics and the prep's figures, for JSON output."""
        return {"label": self.label, "samples": self.samples,
                "calls_per_sample": self.calls_per_sample, "min": self.min,
                "median": self.median, "mean": self.mean, "max": self.max,
                "allocations": self.allocations, "evaluations": self.evaluations,
                "chunk": self.chunk, "width": self.width, "path": self.path,
                "work": self.work}

    def __str__(self) -> str:
        return (f"{self.label}: {self.samples} samples with {self.calls_per_sample} evaluations\n"
                f"  min {format_time(self.min)}, median {format_time(self.median)}, "
                f"mean {format_time(self.mean)}, max {format_time(self.max)}; "
                f"{format_count(self.allocations)} allocations per call\n" + (
                    f"  the tape replayed: {self.work}" if self.path == "replay" else
                    f"  f evaluated {self.evaluations} time(s) per call, chunk {self.chunk} "
                    f"({self.width} lanes), "
                    f"{'Python dual arrays' if self.path == 'python' else 'C-level'}"))


def format_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def format_count(count: float) -> str:
    return f"{count:.0f}" if count == round(count) else f"{count:.3g}"


def time_samples(fn: Callable[[], object], seconds: float = 1.0,
                 max_samples: int = 10_000) -> tuple[npt.NDArray[np.float64], int]:
    """Per-call times of fn: samples of `calls` calls each, for about `seconds`.

    `calls` is chosen so one sample lasts at least ~20 microseconds (clock resolution).
    """
    def run(calls: int) -> float:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        return time.perf_counter() - t0

    fn()
    calls, start = 1, time.perf_counter()
    # the best of three, so that one interruption does not fix the sample size
    while min(run(calls) for _ in range(3)) < 2e-5 and calls < 1 << 20:
        calls *= 2
    times: list[float] = []
    deadline = start + seconds
    while (time.perf_counter() < deadline or len(times) < 3) and len(times) < max_samples:
        times.append(run(calls) / calls)
    return np.array(times), calls


def profile(operator: str | Callable[..., Any], f: Callable[..., Any] | FunctionWrapper,
            x: npt.ArrayLike, dx: npt.ArrayLike | tuple[npt.ArrayLike, ...] | None = None, *,
            y: npt.NDArray[Any] | None = None, chunk: int | None = None, seconds: float = 1.0,
            label: str | None = None, engine: str | None = None) -> Profile:
    """Time and count allocations of the prepared in-place call of an operator.

    Parameters
    ----------
    operator : str or callable
        One of cyad's first-order operators, by name or itself: "jacobian" or
        ``cyad.jacobian``, "value_and_pushforward" or ``cyad.value_and_pushforward``.
    f : callable or FunctionWrapper
        The function, ``f(x)`` or ``f(y, x)`` (with ``y=``).
    x : array_like or float
    dx : array_like or tuple, optional
        The tangent(s) of a pushforward, or the cotangent(s) of a pullback.
    y : ndarray, optional
        The output buffer of a two-argument f.
    chunk : int, optional
        Directions per evaluation of f, as for the operator.
    seconds : float, optional
        How long to sample the time for.
    label : str, optional
        The report's title (default: the operator and f's name).
    engine : str, optional
        The engine the prep runs on (default: the one cyad chooses for a prepared call),
        as for the operator.

    Returns
    -------
    Profile
        The time distribution, allocations per call and the prep's figures.

    Raises
    ------
    ValueError
        If `operator` is not one of the first-order operators, or a pushforward or
        pullback has no dx; and whatever the operator raises for these arguments.

    Examples
    --------
    >>> f = lambda x: np.sum(x ** 2)
    >>> p = cyad.profile(cyad.gradient, f, np.ones(3), seconds=0.01)
    >>> p.evaluations, p.path, p.work
    (0, 'replay', 'one reverse sweep of its tape per call, f not evaluated')
    >>> p = cyad.profile("gradient", f, np.ones(3), seconds=0.01, engine="dual")
    >>> p.evaluations, p.chunk, p.path
    (1, 3, 'python')
    >>> p.min <= p.median <= p.max
    True
    """
    if callable(operator):
        name = getattr(operator, "__name__", "")
        if getattr(cyad, name, None) is not operator:
            raise ValueError(f"cyad: {operator!r} is not one of cyad's operators; choose one "
                             f"of {', '.join(OPERATORS)}")
        operator = name
    if operator not in OPERATORS:
        raise ValueError(f"cyad: no operator {operator!r}; choose one of {', '.join(OPERATORS)}")
    family = operator.removeprefix("value_and_")
    run = getattr(cyad, operator)
    extra = (dx,) if family in _SEEDED else ()
    if family in _SEEDED and dx is None:
        raise ValueError(f"cyad: a {family} needs dx")
    prep = getattr(cyad, f"prepare_{family}")(f, x, *extra, y=y, chunk=chunk, engine=engine)
    out = _buffers_like(run(f, x, *extra, y=y, prep=prep))   # also learns f's output
    if family in _SEEDED:   # spelled out: a call with *args would allocate its tuple
        def call() -> Any:
            return run(f, x, dx, y=y, prep=prep, out=out)
    else:
        def call() -> Any:
            return run(f, x, y=y, prep=prep, out=out)
    times, calls = time_samples(call, seconds)
    allocations = allocations_per_call(call)
    replay = prep.replays
    return Profile(label or f"{operator} of {getattr(f, '__name__', type(f).__name__)}",
                   times, calls, allocations, 0 if replay else prep.evaluations, prep.chunk,
                   prep.width, "replay" if replay else "python" if prep.is_python else "c",
                   prep.work)


def _buffers_like(result: Any) -> Any:
    # out= buffers for a result: arrays (0-d for floats), tuples of them for pairs and batches
    if isinstance(result, tuple):
        return tuple(_buffers_like(r) for r in result)
    return np.empty_like(np.asarray(result))

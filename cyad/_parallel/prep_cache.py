"""The preps a process keeps from call to call: cyad.at_points, cyad.dask, workers=map.

Per problem (a key: f itself, or the hash of a pickled problem a task brings) and per
point shape and dtype, a list of free preps. A run takes one per block of work (`take`:
made, with the problem's `prepare`, where none is free) and puts it back after (`put_back`),
even when f raises: a process makes one prep per problem and concurrent block, once, and
a prep serves one block at a time. A problem is anything with
``prepare(z0, v0) -> (a prep, f's output shape)``; it travels to other processes pickled
with cloudpickle (`payload_of`, `loads`).
"""
import hashlib
import threading
from collections import OrderedDict
from typing import Any, Callable

_lock = threading.Lock()
# key + (point shape, dtype): (problem, f's output shape, free preps); newest last
cache: "OrderedDict[tuple[Any, ...], tuple[Any, tuple[int, ...], list[Any]]]" = OrderedDict()
CACHED_PROBLEMS = 16


def take(key: tuple[Any, ...], problem_of: Callable[[], Any], z0: Any,
         v0: Any) -> tuple[tuple[Any, ...], Any, tuple[int, ...], Any]:
    """A free prep of a problem for points like z0 (made if none is free): (its cache key,
    the problem, f's output shape, the prep). `key` names the problem; `problem_of()` makes
    it where the cache has none."""
    key = key + (z0.shape, z0.dtype.str)
    with _lock:
        entry = cache.get(key)
        if entry is not None:
            cache.move_to_end(key)
            if entry[2]:
                return key, entry[0], entry[1], entry[2].pop()
    problem = problem_of() if entry is None else entry[0]
    prep, y_shape = problem.prepare(z0, v0)
    with _lock:
        entry = cache.setdefault(key, (problem, y_shape, []))
        while len(cache) > CACHED_PROBLEMS:
            cache.popitem(last=False)
    return key, entry[0], y_shape, prep


def put_back(key: tuple[Any, ...], prep: Any) -> None:
    """Give back a prep `take` gave, free for the next run."""
    with _lock:
        entry = cache.get(key)
        if entry is not None:
            entry[2].append(prep)


def payload_of(problem: Any) -> bytes:
    """A problem pickled for a task in another process."""
    try:
        import cloudpickle
    except ImportError as e:
        raise ImportError("cyad: a map-like workers= ships f with cloudpickle: pip install "
                          "cyad[dask] (or cloudpickle)") from e
    return bytes(cloudpickle.dumps(problem))


def payload_key(payload: bytes) -> tuple[str, str]:
    """A pickled problem's key in the cache."""
    return ("payload", hashlib.sha256(payload).hexdigest())


def loads(payload: bytes) -> Any:
    """The problem a payload holds."""
    import cloudpickle
    return cloudpickle.loads(payload)


def take_payload(payload: bytes, z0: Any, v0: Any) -> tuple[tuple[Any, ...], Any,
                                                            tuple[int, ...], Any]:
    """`take` for a task that brought its problem pickled."""
    return take(payload_key(payload), lambda: loads(payload), z0, v0)

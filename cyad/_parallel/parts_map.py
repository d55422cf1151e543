"""An operator's call in parts through a map-like (workers=map: SciPy's protocol).

A prep made with ``workers=map`` (a pool's map, a Dask executor's) runs each call as
`parts` tasks, one per CPU of this machine: task j runs part j of the call (the chunks of
directions that cyad/_core.pxd's part_chunks gives it) on a prep that its process keeps for
the problem, built on the first task and reused after (f shipped with cloudpickle, as by
cyad.at_points). Part 0 returns f's value, y and a first-order result as well.

Every task fills its results' buffers with a NaN of a payload no computation makes
(SENTINEL) before its part runs, and a part writes only the entries it computes: the
caller takes every entry from the one task that wrote it, and raises if an entry was
written by none or by two, so that a result is never assembled from stale or doubled
entries. Each entry is computed as the serial call computes it: bit for bit the serial
result.
"""
import os

import numpy as np

from cyad._parallel.prep_cache import payload_of, put_back, take_payload
from cyad._core import _FAMILY_NAMES

# NaNs of a payload no arithmetic makes (an operation on numbers gives the default NaN; on
# NaNs, one of theirs)
SENTINEL = {np.dtype(np.float64): np.uint64(0x7FF4C0DED0D0CAFE),
            np.dtype(np.float32): np.uint32(0x7FA0C0DE)}
_UNSIGNED = {np.dtype(np.float64): np.uint64, np.dtype(np.float32): np.uint32}


class _Problem:
    """What a task needs to make its prep (picklable with cloudpickle): the chunk and the
    engine as the caller gave them (None: cyad's choice, a default tape watching f's
    Python state as the caller's does)."""

    def __init__(self, family, f, chunk, engine):
        self.family = family
        self.f = f
        self.chunk = chunk
        self.engine = engine

    def prepare(self, x, seeds):
        """A prep for inputs like x: `seeds` (v, y), v the call's tuple of tangents or
        cotangents (None: none), y its y (cyad/_parallel/prep_cache.py calls it so)."""
        from cyad import _operators
        v, y = seeds
        prepare = getattr(_operators, "prepare_" + self.family)
        args = () if v is None else (v,)
        prep = prepare(self.f, x, *args, y=y, chunk=self.chunk, engine=self.engine)
        return prep, ()


def _filled(shape, dtype):
    a = np.empty(shape, dtype)
    a.view(_UNSIGNED[a.dtype])[...] = SENTINEL[a.dtype]
    return a


def run_task(task):
    """Part `part` of `parts` of a call: (payload, x, v, y, wanted, part, parts) ->
    (value, first, main, y) of that part (None where not wanted or not part 0's)."""
    payload, x, v, y, wanted, part, parts = task
    key, problem, _, prep = take_payload(payload, x, (v, y))
    try:
        if prep.out_shape is None:     # a Python f tells its output on its first call
            prep._call_part(problem.f, x, v, y, None, 0, 0, 1)
        main = _result_buffers(prep, problem, v, x.dtype)
        out = (main,) if not wanted else _outs(prep, wanted, main, x.dtype)
        prep._call_part(problem.f, x, v, y, out if wanted else main, wanted, part, parts)
    finally:
        put_back(key, prep)
    value = out[0] if wanted & 1 else None
    first = out[-2] if wanted & 2 else None
    return ((value, first, main, y) if part == 0 else (None, None, main, None))


def _result_buffers(prep, problem, v, dtype):
    # the main result's buffers, filled with the sentinel: one per tangent of a batch
    if v is not None:
        shape = prep.out_shape if problem.family == "pushforward" else prep.x_shape
        return tuple(_filled(shape, dtype) for _ in v)
    shape = {"gradient": prep.x_shape, "jacobian": prep.out_shape + prep.x_shape,
             "hessian": prep.x_shape + prep.x_shape}[problem.family]
    return _filled(shape, dtype)


def _outs(prep, wanted, main, dtype):
    # out= of an operator with several results: (value, first, main) of those wanted
    parts = []
    if wanted & 1:
        parts.append(np.empty(prep.out_shape, dtype))
    if wanted & 2:
        parts.append(np.empty(prep.x_shape, dtype))
    parts.append(main)
    return tuple(parts)


def _merged(pieces, dtype):
    """One array from the parts' arrays: each entry from the one part that wrote it."""
    unsigned, sentinel = _UNSIGNED[np.dtype(dtype)], SENTINEL[np.dtype(dtype)]
    written = [p.view(unsigned) != sentinel for p in pieces]
    counts = np.sum(written, axis=0)
    if np.any(counts != 1):
        raise RuntimeError(f"cyad: the map's tasks wrote {int(np.sum(counts == 0))} entries "
                           f"of a result by none and {int(np.sum(counts > 1))} by several")
    result = np.empty_like(pieces[0])
    for p, w in zip(pieces, written):
        np.copyto(result, p, where=w)
    return result


def call(prep, f, x, v, y, out, wanted):
    """The prep's call (as Prep.call returns it) in tasks of its map-like."""
    family = _FAMILY_NAMES[prep.family]
    if np.shape(x) != prep.x_shape:
        raise ValueError(f"cyad: x has shape {np.shape(x)}, but this prep was made for shape "
                         f"{prep.x_shape}")
    x = np.ascontiguousarray(x, prep.dtype)
    batch = isinstance(v, tuple)
    if v is not None:
        v = tuple(np.ascontiguousarray(t, prep.dtype) for t in v) if batch else \
            np.ascontiguousarray(v, prep.dtype)
    problem = _Problem(family, f, *prep.map_options)
    try:
        payload = payload_of(problem)
    except TypeError as e:
        raise TypeError("cyad: a map-like workers= ships f to its tasks with cloudpickle, "
                        "and f cannot be pickled (a C function cannot: give workers=k, "
                        "threads)") from e
    parts = os.cpu_count() or 1
    tasks = [(payload, x, v if batch or v is None else (v,), None if y is None else y.copy(),
              wanted, j, parts) for j in range(parts)]
    answers = list(prep.workers_map(run_task, tasks))
    if len(answers) != parts:
        raise RuntimeError(f"cyad: the map answered {len(answers)} of {parts} tasks")
    mains = [a[2] for a in answers]
    if isinstance(mains[0], tuple):
        main = tuple(_merged([m[k] for m in mains], prep.dtype) for k in range(len(mains[0])))
        if not batch:
            main = main[0]
    else:
        main = _merged(mains, prep.dtype)
    value, first, _, y_final = answers[0]
    if y is not None:
        y[...] = y_final
    return _returned(main, value, first, out, wanted)


def _returned(main, value, first, out, wanted):
    results = ((value,) if wanted & 1 else ()) + ((first,) if wanted & 2 else ()) + (main,)
    if out is not None:
        targets = (out,) if not wanted else out
        if not isinstance(targets, tuple) or len(targets) != len(results):
            raise TypeError(f"cyad: out= of this operator is {len(results)} buffer(s)")
        for target, result in zip(targets, results):
            for t, r in (zip(target, result) if isinstance(result, tuple)
                         else ((target, result),)):
                if (not isinstance(t, np.ndarray) or t.shape != r.shape or t.dtype != r.dtype
                        or not t.flags.writeable):
                    raise ValueError(f"cyad: an out= buffer must be a writeable array of "
                                     f"shape {r.shape} and dtype {r.dtype}")
                t[...] = r
        return out
    return results[0] if len(results) == 1 else results

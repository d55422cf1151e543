"""cyad.at_points: an operator at every row of a batch of points, serially, on threads, or
through a map-like (process pools, Dask).

A problem (`_Problem`) is what every worker needs: the operator's family and wanted
results, f as the prep sees it, the chunk and the engine. Points go through one compiled
loop (cyad/_parallel/points_loop.pyx) that calls a prep's nogil entry point row by row and writes
the rows of stacked outputs, so that serial, threaded and remote runs compute every row
the same way, bit for bit.

- `workers=None` or 1: one prep, one loop over all rows.
- `workers=k`: k contiguous blocks of rows, each with a prep of its own, looped over at
  once on cyad's threads with the GIL released (`run_blocks`: they overlap where the prep
  runs without the GIL, a tape or a C function; Ctrl-C stops them). A Python f on the
  dual engine holds the GIL for every evaluation, where threads would only take turns:
  it runs serially.
- `workers=map` (SciPy's protocol: `pool.map`, `client.get_executor().map`): blocks of
  rows are tasks `(payload, rows, tangents)`, the problem pickled once with cloudpickle;
  `run_task` runs one wherever the map sends it.

Preps are kept from call to call in the process's cache (cyad/_parallel/prep_cache.py): per
problem (f itself here, the payload's hash in a task), a block takes a free one (made, with
one Python call that tells f's output, where none is free) and puts it back after.
Reusing a prep is reusing it as its engine allows: a default tape records f anew when the
Python state f reads has changed; `engine="tape"` freezes that state at the record, as a
prep the caller keeps does.

Per-point arguments (`args=`, f(x, *args_i)) travel with the point: a row of z is x and
the arguments side by side (one array for threads and tasks alike), and the prep
differentiates a `Bound` of f in x alone (cyad/_arguments/bound.pyx) whose arguments the
loop points at each row's. A tape records f once, the arguments inputs of every call
(arrays closed over instead would be constants of the tape, recorded anew whenever they
change), and the derivatives are x's alone: the arguments cost no directions.
"""
import os
import warnings

import numpy as np

from cyad import _operators
from cyad._arguments.bound import Bound
from cyad._reporting import warnings as _warnings
from cyad._parallel.prep_cache import payload_key, payload_of, put_back, take, take_payload
from cyad._parallel.points_loop import GRADIENT, HESSIAN, HVP, JACOBIAN, run_blocks, run_rows
from cyad._reporting.progress import Progress
from cyad._wrapper import FunctionWrapper

# operator name: (family, returns the value, returns the first derivative beside the main one)
_OPERATORS = {
    "gradient": (GRADIENT, False, False),
    "value_and_gradient": (GRADIENT, True, False),
    "jacobian": (JACOBIAN, False, False),
    "value_and_jacobian": (JACOBIAN, True, False),
    "hessian": (HESSIAN, False, False),
    "value_gradient_and_hessian": (HESSIAN, True, True),
    "hvp": (HVP, False, False),
    "gradient_and_hvp": (HVP, False, True),
}
_FAMILY_OPERATOR = {GRADIENT: "gradient", JACOBIAN: "jacobian", HESSIAN: "hessian",
                    HVP: "hvp"}


class _PointPrep:
    """A prep of the points' problem, and the Bound it differentiates (None without
    per-point arguments)."""

    __slots__ = ("prep", "bound")

    def __init__(self, prep, bound):
        self.prep, self.bound = prep, bound


class _Problem:
    """What a worker needs to differentiate at a block of points (picklable with
    cloudpickle): f, x's shape and the per-point arguments' shapes (a row of z holds x's
    elements, then theirs)."""

    def __init__(self, name, f, x_shape, arg_shapes, chunk, engine):
        self.family, self.with_value, self.with_first = _OPERATORS[name]
        self.f = f
        self.x_shape = x_shape
        self.arg_shapes = arg_shapes
        self.chunk = chunk
        self.engine = engine

    def _split(self, z0):
        # a row of z as x and the arguments' arrays (views of it)
        if not self.arg_shapes:
            return z0, ()
        row = z0.reshape(-1)
        n_x = int(np.prod(self.x_shape, dtype=np.intp))
        parts, start = [], n_x
        for shape in self.arg_shapes:
            size = int(np.prod(shape, dtype=np.intp))
            parts.append(row[start:start + size].reshape(shape))
            start += size
        return row[:n_x].reshape(self.x_shape), tuple(parts)

    def leaf_offsets(self, itemsize):
        """The arguments' bytes' places in a row of z."""
        offsets, start = [], int(np.prod(self.x_shape, dtype=np.intp))
        for shape in self.arg_shapes:
            offsets.append(start * itemsize)
            start += int(np.prod(shape, dtype=np.intp))
        return tuple(offsets)

    def prepare(self, z0, v0):
        """A prep for points like z0 that knows f's output (one call of the operator)."""
        name = _FAMILY_OPERATOR[self.family]
        prepare = getattr(_operators, "prepare_" + name)
        operator = getattr(_operators, name)
        options = {"chunk": self.chunk, "engine": self.engine}
        x0, leaves = self._split(z0)
        bound = None
        f = self.f
        if self.arg_shapes:
            # (copies: the Bound holds them, not the caller's points)
            bound = f = Bound(self.f, tuple(leaf.copy() for leaf in leaves), z0.dtype)
        tangent = (v0,) if self.family == HVP else ()
        prep = prepare(f, x0, *tangent, **options)
        result = operator(f, x0, *tangent, prep=prep, **options)
        if bound is not None:
            bound.per_rows()
        if self.family != JACOBIAN:   # the others' f is scalar-valued
            return _PointPrep(prep, bound), ()
        return _PointPrep(prep, bound), np.shape(result)[:np.ndim(result) - np.ndim(x0)]

    def shapes(self, y_shape):
        """Per point: the value's, the first result's and the main result's shapes."""
        x = self.x_shape
        main = {GRADIENT: x, JACOBIAN: y_shape + x, HESSIAN: x + x, HVP: x}[self.family]
        return y_shape, x, main

    def run(self, point_prep, z, v, value, first, main, start, stop):
        """Rows start..stop of the outputs from the rows of z (and v) on one prep."""
        run_rows(point_prep.prep, point_prep.bound, self.family, z, v, value, first, main,
                 self.leaf_offsets(z.itemsize), start, stop)

    def run_blocks(self, point_preps, z, v, value, first, main, ranges):
        """The rows of every block (start, stop) at once, block k on point_preps[k], on
        cyad's threads."""
        run_blocks([p.prep for p in point_preps], [p.bound for p in point_preps], self.family,
                   z, v, value, first, main, self.leaf_offsets(z.itemsize), ranges)


def _float_dtype(a, what):
    if np.issubdtype(a.dtype, np.complexfloating):
        raise TypeError(f"cyad: {what} must be real, not {a.dtype}")
    return a.dtype if a.dtype in (np.float32, np.float64) else np.dtype(np.float64)


def _operator_name(operator):
    name = operator if isinstance(operator, str) else getattr(operator, "__name__", None)
    if name not in _OPERATORS or not (isinstance(operator, str)
                                       or getattr(_operators, name) is operator):
        raise ValueError(f"cyad: at_points takes one of the operators {sorted(_OPERATORS)} "
                         f"(or its name), not {operator!r}")
    return name


def _blocks(m, parts):
    edges = np.linspace(0, m, min(parts, m) + 1).round().astype(np.intp)
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _outputs(out, problem, shapes, m, dtype):
    """The stacked outputs (value, first, main; None where not wanted), the caller's checked."""
    names = ([0] if problem.with_value else []) + ([1] if problem.with_first else []) + [2]
    given = [None] * 3
    if out is not None:
        parts = (out,) if len(names) == 1 else out
        if not isinstance(parts, tuple) or len(parts) != len(names):
            raise ValueError(f"cyad: out= takes {len(names)} arrays here, as a "
                             f"{'tuple' if len(names) > 1 else 'single array'}")
        for k, a in zip(names, parts):
            given[k] = a
    outputs = [None] * 3
    for k in names:
        shape = (m,) + shapes[k]
        a = given[k]
        if a is None:
            a = np.empty(shape, dtype)
        elif (not isinstance(a, np.ndarray) or a.shape != shape or a.dtype != dtype
              or not a.flags.c_contiguous or not a.flags.writeable):
            raise ValueError(f"cyad: out= must hold writeable C-contiguous {dtype} arrays of "
                             f"shapes {[(m,) + shapes[j] for j in names]}")
        outputs[k] = a
    return outputs


def _results(outputs, out, problem):
    if out is not None:
        return out
    value, first, main = outputs
    if problem.with_value and problem.with_first:
        return value, first, main
    if problem.with_value:
        return value, main
    if problem.with_first:
        return first, main
    return main


def at_points(operator, f, points, v=None, *, args=(), workers=None, tasks=None, out=None,
              chunk=None, engine=None, progress=False):
    """An operator of f at every row of `points`, the results stacked along a first axis.

    Parameters
    ----------
    operator : callable or str
        ``cyad.gradient``, ``value_and_gradient``, ``jacobian``, ``value_and_jacobian``,
        ``hessian``, ``value_gradient_and_hessian``, ``hvp`` or ``gradient_and_hvp``
        (or its name).
    f : callable
        The function, ``f(x, *args_i)``; a cyad.FunctionWrapper only without `args`.
    points : array_like
        Points along the first axis: ``points[i]`` is one x.
    v : array_like, optional
        For ``hvp`` and ``gradient_and_hvp``: one tangent per point, shaped like `points`.
    args : tuple of array_like, optional
        Per-point arguments: ``args[j][i]`` is f's argument j at point i (converted to the
        points' dtype; inputs of each row's call, not differentiated).
    workers : None, int or map-like, optional
        None or 1: serially. An int k: k threads, each with a prep of its own and a block of
        rows, looping in compiled code without the GIL (serially where the prep runs a
        Python f on the dual engine, which holds the GIL: use a process pool for it).
        A map-like ``map(func, iterable)``
        (``ThreadPoolExecutor().map``, ``multiprocessing.Pool().map``, a Dask client's
        ``get_executor().map``): blocks of rows as tasks, f shipped with cloudpickle, one
        prep per problem cached in every worker process.
    tasks : int, optional
        Blocks of rows for a map-like (default: one per CPU of this machine, at most one per
        point). A task costs a Dask cluster about 0.2-1 ms (more on a busy machine): give it
        at least a few milliseconds of work.
    out : ndarray or tuple of ndarray, optional
        The stacked results' arrays (C-contiguous, of the results' shapes and dtype),
        returned themselves.
    chunk, engine : optional
        As for the operator (see its prepare function).
    progress : bool, optional
        Show the points done as the run goes: a tqdm bar where tqdm is installed, else a
        line on stderr (the rows then run in about a hundred slices; a map-like's tasks
        as they come back).

    Returns
    -------
    ndarray or tuple of ndarray
        The operator's results with a first axis of points: a scalar value becomes a vector
        of values.

    Raises
    ------
    Exception
        What f raised at a point (a note names the point); from a process, as the map
        re-raises it.

    Examples
    --------
    >>> points = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> cyad.at_points(cyad.gradient, lambda x: np.sum(x**2), points)
    array([[2., 4.],
           [6., 8.]])
    """
    name = _operator_name(operator)
    points = np.asarray(points)
    if points.ndim < 1 or points.shape[0] == 0:
        raise ValueError("cyad: points must have a first axis of at least one point")
    dtype = _float_dtype(points, "points")
    points = np.ascontiguousarray(points, dtype)
    m, x_shape = points.shape[0], points.shape[1:]
    family = _OPERATORS[name][0]
    if (family == HVP) != (v is not None):
        raise TypeError(f"cyad: at_points({name!r}) " + ("takes v, one tangent per point"
                                                         if family == HVP else "takes no v"))
    if family == HVP:
        v = np.asarray(v)
        _float_dtype(v, "v")
        if v.shape != points.shape:
            raise ValueError(f"cyad: v must be shaped like points {points.shape}, not {v.shape}")
        v = np.ascontiguousarray(v, dtype)
    if not isinstance(args, tuple):
        raise TypeError("cyad: args= takes a tuple of arrays, one row per point")
    z, arg_shapes = points, ()
    if args:
        if isinstance(f, FunctionWrapper):
            raise TypeError("cyad: per-point args= need a Python f (a FunctionWrapper's C "
                            "function takes x alone)")
        arrays = [np.asarray(a) for a in args]
        for a in arrays:
            _float_dtype(a, "args")
            if a.ndim < 1 or a.shape[0] != m:
                raise ValueError(f"cyad: every array of args= needs a first axis of {m} points")
        # a row: x's elements, then each argument's
        z = np.concatenate([points.reshape(m, -1)] + [a.reshape(m, -1).astype(dtype)
                                                      for a in arrays], axis=1)
        arg_shapes = tuple(a.shape[1:] for a in arrays)
    problem = _Problem(name, f, x_shape, arg_shapes, chunk, engine)
    v0 = None if v is None else v[0]
    if callable(workers):
        with Progress(m, f"cyad.at_points({name})", progress) as shown:
            return _mapped(problem, workers, tasks, z, v, v0, out, m, dtype, shown)
    if workers is None:
        workers = 1
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"cyad: workers= takes None, a positive int or a map-like callable, "
                         f"not {workers!r}")
    # preps kept from call to call, per f (held by the cache, so that its id stays its own)
    key = ("local", id(f), name, x_shape, arg_shapes, chunk, engine)
    taken = []
    try:
        # taken here: a new prep learns f's output from a Python call
        taken.append(take(key, lambda: problem, z[0], None if v is None else v[0]))
        # a Python f on the dual engine holds the GIL for every evaluation: threads would
        # only take turns, so it runs serially (processes run it in parallel)
        holds_gil = taken[0][3].prep.holds_gil
        if holds_gil and workers > 1 and m > 1:
            warnings.warn(_warnings.serial_workers(int(workers), name, replays=False),
                          _warnings.CyadWarning, stacklevel=2)
        blocks = _blocks(m, 1 if holds_gil else int(workers))
        for start, _ in blocks[1:]:
            taken.append(take(key, lambda: problem, z[start],
                               None if v is None else v[start]))
        problem, y_shape = taken[0][1], taken[0][2]
        outputs = _outputs(out, problem, problem.shapes(y_shape), m, dtype)
        # (shown: the rows in slices, each split across the blocks' preps)
        slices = _blocks(m, 100) if progress else [(0, m)]
        with Progress(m, f"cyad.at_points({name})", progress) as shown:
            for first, last in slices:
                if len(blocks) == 1:
                    problem.run(taken[0][3], z, v, *outputs, first, last)
                else:
                    problem.run_blocks([entry[3] for entry in taken], z, v, *outputs,
                                       [(first + a, first + b) for a, b in
                                        _blocks(last - first, len(blocks))])
                shown.update(last - first)
        return _results(outputs, out, problem)
    finally:
        for entry in taken:
            put_back(entry[0], entry[3])


# -- map-likes: tasks, and the preps a process keeps --------------------------------------

def run_task(task):
    """One block of rows of a problem: `task` is (payload, z rows, tangent rows or None);
    returns the stacked (value, first, main), None where not wanted."""
    payload, z, v = task
    key, problem, y_shape, prep = take_payload(payload, z[0], None if v is None else v[0])
    try:
        outputs = _outputs(None, problem, problem.shapes(y_shape), z.shape[0], z.dtype)
        problem.run(prep, z, v, *outputs, 0, z.shape[0])
    finally:
        put_back(key, prep)
    return tuple(outputs)


def _mapped(problem, workers, tasks, z, v, v0, out, m, dtype, shown):
    payload = payload_of(problem)
    # f's output, for the outputs' shapes
    key, _, y_shape, prep = take(payload_key(payload), lambda: problem, z[0], v0)
    put_back(key, prep)
    outputs = _outputs(out, problem, problem.shapes(y_shape), m, dtype)
    if tasks is None:
        tasks = os.cpu_count() or 1
    blocks = _blocks(m, int(tasks))
    work = [(payload, z[a:b], None if v is None else v[a:b]) for a, b in blocks]
    answers = []
    for (a, b), answer in zip(blocks, workers(run_task, work)):
        answers.append(answer)
        shown.update(b - a)
    if len(answers) != len(blocks):   # never leave rows unwritten
        raise RuntimeError(f"cyad: the map answered {len(answers)} of {len(blocks)} tasks")
    for (a, b), results in zip(blocks, answers):
        for target, result in zip(outputs, results):
            if target is not None:
                if result is None or result.shape != (b - a,) + target.shape[1:]:
                    raise RuntimeError(f"cyad: the map answered no rows {a}..{b}")
                target[a:b] = result
    return _results(outputs, out, problem)

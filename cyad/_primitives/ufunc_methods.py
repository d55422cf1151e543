"""The methods of NumPy's ufuncs (reduce, accumulate, outer, at) on an engine's arrays.

An engine's ``__array_ufunc__`` hands a method call here (`call`); each method is
written with table functions and ufunc calls, so it works on every engine at every
order:

- ``reduce``: np.add, np.multiply, np.maximum and np.minimum as np.sum, np.prod, np.max
  and np.min (with ``where=`` and ``initial=``; np.max's convention at ties), np.fmax
  and np.fmin as np.nanmax and np.nanmin, np.subtract and np.divide as the first
  element less (over) the sum (product) of the others; any other binary ufunc of the
  rule table folds from the left, one call per element along a single axis (NumPy's
  order of operations).
- ``accumulate``: np.add and np.multiply as np.cumsum and np.cumprod; np.maximum and
  np.minimum as a linear recurrence scanned by doubling, whose tangent is that of NumPy's
  fold at ties too (JAX's); the associative ufuncs np.fmax, np.fmin, np.logaddexp and
  np.logaddexp2 as a scan by doubling (log2(n) calls; at ties each call splits the
  derivative as the ufunc does); any other binary ufunc folds from the left (one call per
  element).
- ``outer``: the ufunc of the operands with axes added to broadcast them.
- ``at``: in place on its first operand, which must be an engine's array. Repeated
  indices apply in turn, as NumPy's unbuffered ``at``: the indices are split into rounds
  in which each position appears once (the k-th occurrences of every position in round
  k), each round a gather, the ufunc, and a scatter. The second operand is read in full
  first (it may alias the first). Indices and masks read off the values are constants (a
  tape checks them on every replay).

``reduceat`` and the methods of ufuncs outside the rule table are refused.
"""
import numpy as np

from cyad._rules import table as _rule_table
from cyad._dual.array import primal
from cyad._primitives._table import (
    axis_of,
    float_dtype_of,
    is_engine_array,
    ndim_of,
    shape_of,
)
from cyad._primitives.statistics import scan

_REDUCTIONS = {np.add: np.sum, np.multiply: np.prod, np.maximum: np.max, np.minimum: np.min}
_NAN_REDUCTIONS = {np.fmax: np.nanmax, np.fmin: np.nanmin}
# the associative ufuncs and their identities (ufunc(x, identity) is x itself: not np.hypot's
# 0, as hypot(x, 0) is |x| where NumPy's accumulate starts from x)
_SCANS = {np.maximum: -np.inf, np.minimum: np.inf, np.fmax: np.nan, np.fmin: np.nan,
          np.logaddexp: -np.inf, np.logaddexp2: -np.inf}


def call(ufunc, method, inputs, kwargs):
    """ufunc.method(*inputs, **kwargs) on an engine's arrays; `out` is written if given."""
    name = f"{_rule_table.ufunc_name(ufunc)}.{method}"
    out = kwargs.pop("out", None)
    if kwargs.get("dtype") is not None:
        raise TypeError(f"cyad: {name} with a dtype is not supported on an engine's arrays")
    kwargs.pop("dtype", None)
    if method == "at":
        if out is not None:
            raise TypeError(f"{name} takes no out")
        return _at(ufunc, name, *inputs, **kwargs)
    if method not in ("reduce", "accumulate", "outer") or ufunc.nin != 2:
        raise TypeError(f"cyad: {name} is not supported on an engine's arrays")
    result = {"reduce": _reduce, "accumulate": _accumulate, "outer": _outer}[method](
        ufunc, name, *inputs, **kwargs)
    if out is None:
        return result
    target = out[0] if isinstance(out, tuple) else out
    target[...] = result
    return target


def _single_axis(name, axis, ndim):
    if axis is None or (isinstance(axis, tuple) and len(axis) != 1):
        raise ValueError(f"cyad: {name} reduces along one axis")
    return axis_of(axis[0] if isinstance(axis, tuple) else axis, ndim)


def _reduce(ufunc, name, array, axis=0, keepdims=False, initial=None, where=True):
    options = {} if initial is None else {"initial": initial}
    if where is not True:
        options["where"] = where
    if ufunc in _REDUCTIONS:
        return _REDUCTIONS[ufunc](array, axis, keepdims=keepdims, **options)
    if options:
        raise TypeError(f"cyad: {name} with initial= or where= is not supported on an engine's "
                        "arrays")
    if ufunc in _NAN_REDUCTIONS:
        return _NAN_REDUCTIONS[ufunc](array, axis, keepdims=keepdims)
    ndim = ndim_of(array)
    axis = _single_axis(name, axis, ndim)
    first = array[(slice(None),) * axis + (0,)]
    rest = array[(slice(None),) * axis + (slice(1, None),)]
    if ufunc is np.subtract:
        result = first - np.sum(rest, axis)
    elif ufunc is np.divide:
        result = first / np.prod(rest, axis)
    else:
        result = first
        for i in range(1, shape_of(array)[axis]):
            result = ufunc(result, array[(slice(None),) * axis + (i,)])
    return np.expand_dims(result, axis) if keepdims else result


def _accumulate(ufunc, name, array, axis=0):
    axis = _single_axis(name, axis, ndim_of(array))
    if ufunc is np.add:
        return np.cumsum(array, axis)
    if ufunc is np.multiply:
        return np.cumprod(array, axis)
    if ufunc in _RUNNING:
        return _running_extreme(ufunc, array, axis)
    if ufunc in _SCANS:
        return scan(ufunc, array, axis, _SCANS[ufunc])
    results = [array[(slice(None),) * axis + (0,)]]
    for i in range(1, shape_of(array)[axis]):
        results.append(ufunc(results[-1], array[(slice(None),) * axis + (i,)]))
    return np.stack(results, axis)


_RUNNING = {np.maximum: (np.greater, -np.inf), np.minimum: (np.less, np.inf)}


def _shifted(x, axis, fill):
    # x moved one place on along `axis`, `fill` first
    n = shape_of(x)[axis]
    edge = list(shape_of(x))
    edge[axis] = 1
    before = x[(slice(None),) * axis + (slice(0, n - 1),)]
    return np.concatenate([np.full(edge, fill, float_dtype_of(x)), before], axis)


def _running_extreme(ufunc, x, axis):
    """np.maximum.accumulate (np.minimum's): the running extreme r_i = ufunc(r_{i-1}, x_i)
    with the tangent of that fold under the rule table's ufunc (half to each side at a tie,
    as JAX's), in log2(n) steps: r_i = s_i r_{i-1} + (1 - s_i) x_i, with s_i 1, 1/2 or 0 as
    r_{i-1} is beyond, equal to or short of x_i, a linear recurrence scanned by doubling
    (the affine maps' compositions); its weights are powers of two, so that r is exact."""
    beyond, identity = _RUNNING[ufunc]
    dtype = float_dtype_of(x)
    one, half, zero = (np.full((), v, dtype) for v in (1.0, 0.5, 0.0))
    previous = _shifted(scan(ufunc, x, axis, identity), axis, identity)
    a = np.where(previous == x, half, np.where(beyond(previous, x), one, zero))
    b = np.where(a == 1.0, zero, x) * (1.0 - a)   # (an infinite x where its weight is 0: 0)
    n = shape_of(x)[axis]
    shift = 1
    while shift < n:
        # (a, b) of the window of 2 shift elements: composed with the window before
        b_before = b[(slice(None),) * axis + (slice(0, n - shift),)]
        a_before = a[(slice(None),) * axis + (slice(0, n - shift),)]
        pad = list(shape_of(x))
        pad[axis] = shift
        b_before = np.concatenate([np.zeros(pad, dtype), b_before], axis)
        a_before = np.concatenate([np.ones(pad, dtype), a_before], axis)
        b = b + np.where(a == 0.0, zero, a * b_before)
        a = a * a_before
        shift *= 2
    return b


def _outer(ufunc, name, a, b):
    return ufunc(np.reshape(a, tuple(shape_of(a)) + (1,) * ndim_of(b)), b)


def _rounds(positions):
    """The positions split into rounds where each appears once: (indices into positions)
    per round, occurrences in their order."""
    order = np.argsort(positions, kind="stable")
    ordered = positions[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    group = np.repeat(starts, np.diff(np.r_[starts, ordered.size]))
    occurrence = np.empty_like(positions)
    occurrence[order] = np.arange(ordered.size) - group
    return [np.flatnonzero(occurrence == k) for k in range(int(occurrence.max(initial=-1)) + 1)]


def _index(name, index):
    # an index (or mask) read off an engine's values is read (a tape guards it)
    if not is_engine_array(index):
        return index
    if index.dtype.kind == "f":
        raise TypeError(f"cyad: {name} takes indices, not differentiated arrays")
    return primal(index)


def _at(ufunc, name, a, indices, b=None):
    if not is_engine_array(a):
        raise TypeError(f"cyad: {name} into a plain ndarray would lose the derivative; "
                        "apply it to a dual or traced array (np.zeros_like(x))")
    indices = tuple(_index(name, i) for i in indices) if isinstance(indices, tuple) \
        else _index(name, indices)
    if (b is None) != (ufunc.nin == 1):
        raise ValueError(f"{name} takes {ufunc.nin + 1} operands")
    shape = shape_of(a)
    positions = np.arange(int(np.prod(shape))).reshape(shape)[indices]
    flat = positions.reshape(-1)
    if b is not None:
        # read in full first (b may alias a), one element per position
        b = np.reshape(np.broadcast_to(np.copy(b) if is_engine_array(b) else np.asarray(b),
                                       positions.shape), -1)
    for chosen in _rounds(flat):
        index = np.unravel_index(flat[chosen], shape)
        a[index] = ufunc(a[index]) if b is None else ufunc(a[index], b[chosen])

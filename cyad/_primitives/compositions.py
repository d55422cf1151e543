"""NumPy functions written with other NumPy functions: no derivative code of their own.

Each one calls NumPy functions and ufuncs on its arguments, which dispatch back to
the engine for its arrays; index computations that depend on values (sorting
permutations, interpolation intervals) read the values (`primal`) and are constants.

The ranges (np.linspace, np.logspace, np.geomspace) follow NumPy's steps and are
differentiable in their ends (and logspace's base); np.apply_along_axis calls the
function on every 1-D slice and stacks the results.
"""
import operator

import numpy as np

from cyad._primitives._table import (
    axes_of,
    axis_of,
    composition,
    is_engine_array,
    ndim_of,
    shape_of,
)
from cyad._primitives.structural import check_order

# -- shape and layout -------------------------------------------------------------------

@composition(np.ravel)
def _ravel(a, order="C"):
    check_order("ravel", order)
    return np.reshape(a, -1, order=order)


@composition(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    ndim = ndim_of(a)
    axes = list(range(ndim))
    i, j = axis_of(axis1, ndim), axis_of(axis2, ndim)
    axes[i], axes[j] = j, i
    return np.transpose(a, axes)


@composition(np.moveaxis)
def _moveaxis(a, source, destination):
    ndim = ndim_of(a)
    source, destination = axes_of(source, ndim), axes_of(destination, ndim)
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number "
                         "of elements")
    order = [i for i in range(ndim) if i not in source]
    for d, s in sorted(zip(destination, source, strict=True)):
        order.insert(d, s)
    return np.transpose(a, order)


@composition(np.rollaxis)
def _rollaxis(a, axis, start=0):
    """NumPy's older np.moveaxis: axis rolled back until it lies before `start`."""
    ndim = ndim_of(a)
    axis = axis_of(axis, ndim)
    if start < 0:
        start += ndim
    if not 0 <= start < ndim + 1:
        raise getattr(np, "exceptions", np).AxisError(
            f"'start' arg requires {-ndim} <= start < {ndim + 1}, but {start} was passed in")
    if axis < start:
        start -= 1
    order = [i for i in range(ndim) if i != axis]
    order.insert(start, axis)
    return np.transpose(a, order)


@composition(np.squeeze)
def _squeeze(a, axis=None):
    shape = shape_of(a)
    if axis is None:
        axes = tuple(i for i, n in enumerate(shape) if n == 1)
    else:
        axes = axes_of(axis, len(shape))
        if any(shape[i] != 1 for i in axes):
            raise ValueError("cannot select an axis to squeeze out which has size not "
                             "equal to one")
    return np.reshape(a, tuple(n for i, n in enumerate(shape) if i not in axes))


@composition(np.expand_dims)
def _expand_dims(a, axis):
    shape = list(shape_of(a))
    for i in sorted(axes_of(axis, len(shape) + (1 if np.isscalar(axis) else len(axis)))):
        shape.insert(i, 1)
    return np.reshape(a, tuple(shape))


def _at_least(x, ndim, plain):
    if not hasattr(x, "ndim") or type(x) is np.ndarray:
        return plain(x)
    return x if x.ndim >= ndim else np.reshape(x, (1,) * (ndim - x.ndim) + x.shape)


@composition(np.atleast_1d)
def _atleast_1d(*arys):
    results = [_at_least(x, 1, np.atleast_1d) for x in arys]
    return results[0] if len(results) == 1 else tuple(results)


@composition(np.atleast_2d)
def _atleast_2d(*arys):
    results = [_at_least(x, 2, np.atleast_2d) for x in arys]
    return results[0] if len(results) == 1 else tuple(results)


@composition(np.atleast_3d)
def _atleast_3d(*arys):
    """NumPy's shapes: () -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    results = []
    for x in arys:
        if not hasattr(x, "ndim") or type(x) is np.ndarray:
            results.append(np.atleast_3d(x))
            continue
        shape = tuple(x.shape)
        new = {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}.get(len(shape), shape)
        results.append(x if new == shape else np.reshape(x, new))
    return results[0] if len(results) == 1 else tuple(results)


def _check_no_dtype(function, dtype):
    # (np.row_stack passes dtype=None on to vstack)
    if dtype is not None:
        raise TypeError(f"cyad: numpy.{function}'s dtype= is not supported on cyad's arrays "
                        "(.astype() the result)")


@composition(np.hstack)
def _hstack(tup, *, dtype=None, casting="same_kind"):
    _check_no_dtype("hstack", dtype)
    arrays = [np.atleast_1d(x) for x in tup]
    return np.concatenate(arrays, 0 if arrays[0].ndim == 1 else 1)


@composition(np.vstack)
def _vstack(tup, *, dtype=None, casting="same_kind"):
    _check_no_dtype("vstack", dtype)
    return np.concatenate([np.atleast_2d(x) for x in tup], 0)


# -- reductions ------------------------------------------------------------------------------

def _count(a, axis):
    shape = shape_of(a)
    return int(np.prod([shape[i] for i in axes_of(axis, len(shape))]))


@composition(np.mean)
def _mean(a, axis=None, *, keepdims=False, where=True):
    if where is True:
        return np.sum(a, axis, keepdims=keepdims) / _count(a, axis)
    shape = shape_of(a)
    selected = where if shape_of(where) == shape else np.broadcast_to(where, shape)
    count = np.count_nonzero(selected, axis, keepdims=keepdims)
    with np.errstate(invalid="ignore", divide="ignore"):   # NaN where none is selected
        return np.sum(a, axis, keepdims=keepdims, where=where) / count


@composition(np.var)
def _var(a, axis=None, *, ddof=0, keepdims=False):
    d = a - np.mean(a, axis, keepdims=True)
    return np.sum(d * d, axis, keepdims=keepdims) / max(_count(a, axis) - ddof, 0)


@composition(np.std)
def _std(a, axis=None, *, ddof=0, keepdims=False):
    """sqrt(var): at a zero variance the derivative is +inf in directions that move x
    (sqrt's rule), 0 in those that do not."""
    return np.sqrt(np.var(a, axis, ddof=ddof, keepdims=keepdims))


# -- products --------------------------------------------------------------------------------

@composition(np.dot)
def _dot(a, b):
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        return np.multiply(a, b)
    return np.tensordot(a, b, ([ndim_of(a) - 1], [max(ndim_of(b) - 2, 0)]))


@composition(np.inner)
def _inner(a, b):
    if ndim_of(a) == 0 or ndim_of(b) == 0:
        return np.multiply(a, b)
    return np.tensordot(a, b, ([-1], [-1]))


@composition(np.outer)
def _outer(a, b):
    return np.multiply(np.reshape(a, (-1, 1)), np.reshape(b, (1, -1)))


@composition(np.kron)
def _kron(a, b):
    # the outer product with a's and b's axes interleaved, each pair merged
    sa, sb = shape_of(a), shape_of(b)
    ndim = max(len(sa), len(sb))
    sa, sb = (1,) * (ndim - len(sa)) + sa, (1,) * (ndim - len(sb)) + sb
    a = np.reshape(a, tuple(n for m in sa for n in (m, 1)))
    b = np.reshape(b, tuple(n for m in sb for n in (1, m)))
    return np.reshape(a * b, tuple(m * n for m, n in zip(sa, sb, strict=True)))


# -- selection and ordering --------------------------------------------------------------------

@composition(np.clip)
def _clip(a, a_min=None, a_max=None, *, min=None, max=None):
    # through the ufuncs, so that the rule table's conventions hold (1/2 at a bound)
    if (a_min is not None and min is not None) or (a_max is not None and max is not None):
        raise ValueError("Passed both a_min and min, or both a_max and max; use one of each")
    low = a_min if min is None else min
    high = a_max if max is None else max
    if low is None and high is None:
        return np.copy(a)
    result = a if low is None else np.maximum(a, low)
    return result if high is None else np.minimum(result, high)


@composition(np.sort)
def _sort(a, axis=-1, kind=None, *, stable=None):
    """The elements taken in the order of a stable sort of the values: equal elements keep
    their order, and each takes its own derivative (where sort is not differentiable).
    Every `kind` sorts the values alike, so the sort is stable whatever it says."""
    if axis is None:
        a, axis = np.reshape(a, -1), -1
    order = np.argsort(a, axis=axis, kind="stable")
    return np.take_along_axis(a, order, axis)


@composition(np.interp)
def _interp(x, xp, fp, left=None, right=None):
    """Linear interpolation, differentiable in x, xp, fp, left and right. At a knot the
    derivatives are those of the interval on its right (of the last interval at the last
    knot), as JAX's. The result takes the operands' dtype (NumPy's computes in float64)."""
    xp = xp if is_engine_array(xp) else np.asarray(xp)
    fp = fp if is_engine_array(fp) else np.asarray(fp)
    i = np.clip(np.searchsorted(xp, x, side="right"), 1, len(xp) - 1)
    f0, f1 = fp[i - 1], fp[i]
    inside = f0 + (x - xp[i - 1]) * ((f1 - f0) / (xp[i] - xp[i - 1]))
    below = fp[0] if left is None else left
    above = fp[-1] if right is None else right
    return np.where(x < xp[0], below, np.where(x > xp[-1], above, inside))



# -- ranges ------------------------------------------------------------------------------------

def _endpoint(x):
    """A start or stop of a range: an engine's array as it is, a Python number as it is (weak
    in NumPy's promotion), anything else as an ndarray."""
    return x if is_engine_array(x) or isinstance(x, (int, float)) else np.asarray(x)


def _dtype_of(x):
    return x.dtype if hasattr(x, "dtype") else x


def _replace_ends(y, first, last):
    """y (the range along its first axis) with its first row `first` and its last `last`
    (None: kept), each broadcast to a row."""
    shape = shape_of(y)[1:]
    rows = [] if first is None else [np.reshape(np.broadcast_to(first, shape), (1,) + shape)]
    stop = shape_of(y)[0] - (last is not None)
    rows.append(y[(first is not None):stop])
    if last is not None:
        rows.append(np.reshape(np.broadcast_to(last, shape), (1,) + shape))
    return np.concatenate(rows, 0)


@composition(np.linspace)
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
              device=None):
    """NumPy's steps, differentiable in start and stop: start + k * step, with the last
    element stop itself where the range ends there."""
    if device not in (None, "cpu"):
        raise ValueError(f"Device not understood. Only \"cpu\" is allowed, but received: "
                         f"{device}")
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    start, stop = _endpoint(start), _endpoint(stop)
    dt = np.result_type(_dtype_of(start), _dtype_of(stop), 0.0)
    delta = stop - start
    y = np.arange(0, num, dtype=dt).reshape((-1,) + (1,) * ndim_of(delta))
    if div > 0:
        step = delta / div
        if np.any(step == 0):   # (subnormal steps: NumPy's order of operations)
            y = (y / div) * delta
        else:
            y = y * step
    else:
        step = np.nan
        y = y * delta
    y = y + start
    if endpoint and num > 1:
        y = _replace_ends(y, None, stop)
    if axis != 0:
        y = np.moveaxis(y, 0, axis)
    if dtype is not None and np.issubdtype(dtype, np.integer):
        y = np.floor(y)
    if dtype is not None:
        y = y.astype(dtype)
    return (y, step) if retstep else y


def _at_least_dims(x, ndim):
    x = x if is_engine_array(x) else np.asarray(x)
    return np.reshape(x, (1,) * (ndim - ndim_of(x)) + tuple(shape_of(x))) \
        if ndim_of(x) < ndim else x


@composition(np.logspace)
def _logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """base ** np.linspace(start, stop): differentiable in start, stop and base."""
    if not isinstance(base, (float, int)) and ndim_of(base):
        # an array of bases broadcasts with the others before the range's axis is placed
        ndim = len(np.broadcast_shapes(shape_of(start), shape_of(stop), shape_of(base)))
        start, stop, base = (_at_least_dims(a, ndim) for a in (start, stop, base))
        base = np.expand_dims(base, axis)
    y = np.power(base, np.linspace(start, stop, num=num, endpoint=endpoint, axis=axis))
    return y if dtype is None else y.astype(dtype)


@composition(np.geomspace)
class _geomspace:
    """NumPy's: signs taken out of start (and stop), a logspace of the magnitudes, the ends
    start and stop themselves. Differentiable in start and stop."""

    note = "the result keeps start's and stop's float dtype (NumPy's: float64 at least)"

    def impl(start, stop, num=50, endpoint=True, dtype=None, axis=0):
        start, stop = _endpoint(start), _endpoint(stop)
        if np.any(start == 0) or np.any(stop == 0):
            raise ValueError("Geometric sequence cannot include zero")
        dt = np.result_type(_dtype_of(start), _dtype_of(stop), float(num))
        if not is_engine_array(start):
            start = np.asarray(start, dt)
        if not is_engine_array(stop):
            stop = np.asarray(stop, dt)
        sign = np.sign(start)   # (a constant: sign's derivative is 0)
        start, stop = start / sign, stop / sign
        result = np.logspace(np.log10(start), np.log10(stop), num=num, endpoint=endpoint,
                             base=10.0)
        if num > 0:   # exactly start and stop at the ends (exp(log(x)) may not be x)
            result = _replace_ends(result, start, stop if num > 1 and endpoint else None)
        result = result * sign
        if axis != 0:
            result = np.moveaxis(result, 0, axis)
        return result if dtype is None else result.astype(dtype)


# -- a function along an axis -------------------------------------------------------------------

@composition(np.apply_along_axis)
def _apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """func1d called on every 1-D slice of arr along axis (NumPy's order), the results
    stacked where that axis was: differentiable wherever func1d is."""
    ndim = ndim_of(arr)
    axis = axis_of(axis, ndim)
    moved = np.moveaxis(arr, axis, -1)
    outer = tuple(shape_of(moved)[:-1])
    if 0 in outer:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = []
    for index in np.ndindex(*outer):
        r = func1d(moved[index], *args, **kwargs)
        results.append(r if is_engine_array(r) else np.asarray(r))
    inner = tuple(shape_of(results[0]))
    stacked = np.reshape(np.stack(results), outer + inner)
    k = len(inner)
    order = (list(range(axis)) + list(range(len(outer), len(outer) + k))
             + list(range(axis, len(outer))))
    return np.transpose(stacked, order)

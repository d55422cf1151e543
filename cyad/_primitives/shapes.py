"""Shape functions: padding, rolling, tiling, splitting, joining, selecting by conditions.

Nearly all of them only move elements (and fill some with a constant), which makes them
linear in their operands. They are compositions of a few table functions:

- most go through `_moved`: NumPy's own function runs once on the 1-based positions of
  the operand's elements (an integer array shaped like it), and the result takes each
  element from its position (np.take of the raveled operand) - zero where the positions
  came out 0 (pad's constant mode fills with the constant). So np.pad, np.roll, np.tile,
  np.repeat, np.rot90, np.delete, ... do exactly what NumPy does, and the tape records
  one ravel and one gather (and a where for a fill) whatever the size;
- the joining functions are concatenations of reshaped operands, the splitting ones
  slices, triu and tril a where with a fixed mask;
- np.select is nested wheres (on the tape its conditions are recomputed on every
  replay), np.piecewise masked writes into np.zeros_like(x), as NumPy's (on the tape its
  masks are guards, checked on every replay).

np.compress and np.extract are np.take of the positions their conditions select (the
conditions read off the values). np.array, np.asarray and np.asanyarray reach an engine only
when called with like= one of its arrays (NumPy's dispatch, NEP 35): a list holding its
arrays is then joined by np.stack.

np.take is the one new linear entry: positions along an axis, with its transpose.
np.partition takes the elements in the order np.argpartition gives (a constant, as
np.argsort): the kth element is exact, each element keeps its own derivative.
"""
import numpy as np

from cyad._dual.array import primal
from cyad._primitives._table import (
    axis_of,
    composition,
    constant,
    is_engine_array,
    linear,
    ndim_of,
    shape_of,
)

# -- positions ------------------------------------------------------------------------------


@linear(np.take)
class _take:
    """Elements at positions along an axis (of the flattened array for axis=None); the
    positions are constants, wrapped, clipped or checked as `mode` says."""

    def bind(a, indices, axis=None, *, mode="raise"):
        indices = np.asarray(primal(indices))
        if indices.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer type")
        if axis is None:
            a, axis = np.reshape(a, -1), 0
        axis = axis_of(axis, ndim_of(a))
        n = shape_of(a)[axis]
        if mode == "wrap":
            indices = indices % n
        elif mode == "clip":
            indices = np.clip(indices, 0, n - 1)
        elif mode == "raise":
            if np.any((indices < -n) | (indices >= n)):
                bad = indices[(indices < -n) | (indices >= n)].flat[0]
                raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {n}")
            indices = indices % max(n, 1)
        else:
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
        return (a,), {"indices": indices.astype(np.intp), "axis": axis}

    def impl(x, *, indices, axis, extra=0):
        return x.take(indices, axis)

    def transpose(ct, shapes, *, indices, axis):
        z = np.zeros(shapes[0], ct.dtype)
        moved = np.moveaxis(z, axis, 0)   # a view: the sums land in z
        k = indices.ndim
        ct = np.moveaxis(np.asarray(ct), tuple(range(axis, axis + k)), tuple(range(k)))
        np.add.at(moved, indices.reshape(-1), ct.reshape((indices.size,) + moved.shape[1:]))
        return (z,)


def _positions(a):
    """The 1-based positions of a's elements, shaped like a (0 marks a fill)."""
    shape = shape_of(a)
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.intp).reshape(shape)


def _moved(a, positions, fill=None):
    """The array whose elements are a's at the 1-based flat `positions` (a NumPy
    function's result on `_positions(a)`), and `fill` (an array of that shape, or 0)
    where a position is 0."""
    positions = np.asarray(positions)
    if not is_engine_array(a):
        a = np.asarray(a)
    taken = np.take(np.reshape(a, -1), np.maximum(positions - 1, 0))
    if np.all(positions > 0):
        return taken
    return np.where(positions > 0, taken, 0.0 if fill is None else fill)


@composition(np.pad)
def _pad(array, pad_width, mode="constant", **kwargs):
    """The modes that only place x's elements (constant, edge, reflect, symmetric, wrap);
    the constants of the constant mode are not differentiated."""
    constant_values = kwargs.get("constant_values", 0)
    if mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        raise TypeError(f"cyad: numpy.pad with mode={mode!r} is not supported on cyad's arrays "
                        "(its result is not a placement of the elements: constant, edge, "
                        "reflect, symmetric and wrap are)")
    if kwargs.get("reflect_type", "even") != "even":
        raise TypeError("cyad: numpy.pad with reflect_type='odd' is not supported on cyad's "
                        "arrays (it extrapolates, 2 * edge - reflection, rather than placing "
                        "elements: 2 * np.pad(x, w, 'edge') - np.pad(x, w, mode) gives it "
                        "for one axis)")
    if is_engine_array(constant_values):
        raise TypeError("cyad: numpy.pad's constant_values is not differentiated; pass a "
                        "constant")
    # (NumPy checks the options: those of another mode are refused)
    options = {name: value for name, value in kwargs.items() if name != "constant_values"}
    positions = np.pad(_positions(array), pad_width, mode, **options)
    fill = None
    if mode == "constant" and np.any(np.asarray(constant_values) != 0):
        fill = np.pad(np.zeros(shape_of(array), getattr(array, "dtype", float)), pad_width,
                      mode, constant_values=constant_values)
    return _moved(array, positions, fill)


@composition(np.roll)
def _roll(a, shift, axis=None):
    return _moved(a, np.roll(_positions(a), shift, axis))


@composition(np.tile)
def _tile(A, reps):
    return _moved(A, np.tile(_positions(A), reps))


@composition(np.repeat)
def _repeat(a, repeats, axis=None):
    return _moved(a, np.repeat(_positions(a), np.asarray(primal(repeats)), axis))


@composition(np.fliplr)
def _fliplr(m):
    return _moved(m, np.fliplr(_positions(m)))


@composition(np.flipud)
def _flipud(m):
    return _moved(m, np.flipud(_positions(m)))


@composition(np.rot90)
def _rot90(m, k=1, axes=(0, 1)):
    return _moved(m, np.rot90(_positions(m), k, axes))


@composition(np.diagonal)
def _diagonal(a, offset=0, axis1=0, axis2=1):
    return _moved(a, np.diagonal(_positions(a), offset, axis1, axis2))


@composition(np.diagflat)
def _diagflat(v, k=0):
    return np.diag(np.reshape(v, -1), k)


@composition(np.triu)
def _triu(m, k=0):
    shape = shape_of(m)
    keep = ~np.tri(*shape[-2:], k - 1, dtype=bool)
    return np.where(keep, m, 0.0)


@composition(np.tril)
def _tril(m, k=0):
    shape = shape_of(m)
    return np.where(np.tri(*shape[-2:], k, dtype=bool), m, 0.0)


@composition(np.delete)
def _delete(arr, obj, axis=None):
    return _moved(arr, np.delete(_positions(arr), primal(obj), axis))


@composition(np.insert)
def _insert(arr, obj, values, axis=None):
    """arr's elements where NumPy keeps them, values' (broadcast as NumPy does) where it
    inserts them."""
    positions = np.insert(_positions(arr), primal(obj), -_positions(values), axis)
    if not is_engine_array(values):
        values = np.asarray(values, getattr(arr, "dtype", float))
    from_arr = _moved(arr, np.maximum(positions, 0))
    return np.where(positions > 0, from_arr, _moved(values, np.maximum(-positions, 0)))


@composition(np.append)
def _append(arr, values, axis=None):
    if axis is None:
        return np.concatenate([np.reshape(arr, -1), np.reshape(values, -1)])
    return np.concatenate([arr, values], axis)


# -- splitting --------------------------------------------------------------------------------

@composition(np.array_split)
def _array_split(ary, indices_or_sections, axis=0):
    n = shape_of(ary)[axis_of(axis, ndim_of(ary))]
    if np.ndim(indices_or_sections) == 0:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        each, extra = divmod(n, sections)
        sizes = [each + 1] * extra + [each] * (sections - extra)
        bounds = [0] + list(np.cumsum(sizes))
    else:
        bounds = [0] + [int(i) for i in indices_or_sections] + [n]
    axis = axis_of(axis, ndim_of(ary))
    lead = (slice(None),) * axis
    return [ary[lead + (slice(start, stop),)] for start, stop in zip(bounds[:-1], bounds[1:],
                                                                      strict=True)]


@composition(np.split)
def _split(ary, indices_or_sections, axis=0):
    if np.ndim(indices_or_sections) == 0:
        n = shape_of(ary)[axis_of(axis, ndim_of(ary))]
        if n % int(indices_or_sections):
            raise ValueError("array split does not result in an equal division")
    return np.array_split(ary, indices_or_sections, axis)


@composition(np.hsplit)
def _hsplit(ary, indices_or_sections):
    if ndim_of(ary) == 0:
        raise ValueError("hsplit only works on arrays of 1 or more dimensions")
    return np.split(ary, indices_or_sections, 1 if ndim_of(ary) > 1 else 0)


@composition(np.vsplit)
def _vsplit(ary, indices_or_sections):
    if ndim_of(ary) < 2:
        raise ValueError("vsplit only works on arrays of 2 or more dimensions")
    return np.split(ary, indices_or_sections, 0)


@composition(np.dsplit)
def _dsplit(ary, indices_or_sections):
    if ndim_of(ary) < 3:
        raise ValueError("dsplit only works on arrays of 3 or more dimensions")
    return np.split(ary, indices_or_sections, 2)


# -- joining ----------------------------------------------------------------------------------

def _as_array(x):
    return x if is_engine_array(x) or isinstance(x, np.ndarray) else np.asarray(x, float)


@composition(np.column_stack)
def _column_stack(tup):
    arrays = [_as_array(x) for x in tup]
    arrays = [np.reshape(x, (-1, 1)) if ndim_of(x) < 2 else x for x in arrays]
    return np.concatenate(arrays, 1)


@composition(np.dstack)
def _dstack(tup):
    arrays = [_as_array(x) for x in tup]
    shaped = []
    for x in arrays:
        shape = shape_of(x)
        if len(shape) == 0:
            shape = (1, 1, 1)
        elif len(shape) == 1:
            shape = (1,) + shape + (1,)
        elif len(shape) == 2:
            shape = shape + (1,)
        shaped.append(np.reshape(x, shape))
    return np.concatenate(shaped, 2)


def _block_depth(arrays):
    return 1 + _block_depth(arrays[0]) if isinstance(arrays, list) else 0


@composition(np.block)
def _block(arrays):
    """Nested lists joined from the innermost, along the last axes (NumPy's rule)."""
    depth = _block_depth(arrays)

    def leaves(x):
        return [y for z in x for y in leaves(z)] if isinstance(x, list) else [x]
    ndim = max([depth] + [ndim_of(x) for x in leaves(arrays)])

    def join(x, level):
        if not isinstance(x, list):
            x = _as_array(x)
            return np.reshape(x, (1,) * (ndim - ndim_of(x)) + tuple(shape_of(x)))
        return np.concatenate([join(y, level + 1) for y in x], ndim - depth + level)
    return join(arrays, 0)


def _joined(obj):
    """obj as one array: an engine's array as it is, a list or tuple that holds one (at any
    depth) its elements joined by np.stack (a Python number among them takes the arrays'
    float dtype, as in arithmetic), anything else NumPy's array of it."""
    if is_engine_array(obj) or isinstance(obj, (int, float)):
        return obj
    if isinstance(obj, (list, tuple)):
        parts = [_joined(x) for x in obj]
        if any(is_engine_array(x) for x in parts):
            return np.stack(parts)
    return np.asarray(obj)


def _made(obj, dtype, copy, ndmin):
    x = _joined(obj)
    if not is_engine_array(x):
        return np.array(x, dtype, copy=copy, ndmin=ndmin)
    if dtype is not None and np.dtype(dtype) != x.dtype:
        x = x.astype(dtype)
    elif copy is True and x is obj:
        x = np.copy(x)
    if ndmin > ndim_of(x):
        x = np.reshape(x, (1,) * (ndmin - ndim_of(x)) + tuple(shape_of(x)))
    return x


# NumPy hands these to an engine only when called with like= one of its arrays (NEP 35):
# np.array([x[0], x[1] ** 2], like=x); without like=, NumPy converts the list itself, which
# an engine's array refuses
_LIKE = "with like= an array of cyad's (NumPy dispatches it only then)"


@composition(np.array)
class _array:
    """An engine's array as a copy (as NumPy's); a list or tuple holding engine arrays
    stacked into one."""

    note = _LIKE

    def impl(object, dtype=None, *, copy=True, order="K", subok=False, ndmin=0):
        return _made(object, dtype, copy, ndmin)


@composition(np.asarray)
class _asarray:
    note = _LIKE

    def impl(a, dtype=None, order=None, *, device=None, copy=None):
        return _made(a, dtype, copy, 0)


@composition(np.asanyarray)
class _asanyarray:
    note = _LIKE

    def impl(a, dtype=None, order=None, *, device=None, copy=None):
        return _made(a, dtype, copy, 0)


@composition(np.meshgrid)
def _meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    n = len(xi)
    grids = []
    for i, x in enumerate(xi):
        shape = [1] * n
        shape[i] = -1
        if indexing == "xy" and n > 1 and i < 2:
            shape[0], shape[1] = shape[1], shape[0]
        grids.append(np.reshape(_as_array(x), tuple(shape)))
    if not sparse:
        grids = list(np.broadcast_arrays(*grids))
        grids = [np.copy(g) for g in grids] if copy else grids
    return tuple(grids)


@composition(np.broadcast_arrays)
def _broadcast_arrays(*args, subok=False):
    arrays = [_as_array(x) for x in args]
    shape = np.broadcast_shapes(*[shape_of(x) for x in arrays])
    return tuple(np.broadcast_to(x, shape) for x in arrays)


# -- selection by conditions ----------------------------------------------------------------

@composition(np.select)
def _select(condlist, choicelist, default=0):
    """The first choice whose condition holds (NumPy's order), as nested wheres."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    result = default
    for condition, choice in zip(reversed(condlist), reversed(choicelist), strict=True):
        result = np.where(condition, choice, result)
    return result if is_engine_array(result) else np.asarray(result)


@composition(np.piecewise)
def _piecewise(x, condlist, funclist, *args, **kw):
    """NumPy's: each function on the elements where its condition holds (the last true
    condition wins), the extra function on those where none does, 0 elsewhere."""
    # NumPy's rule: a single condition (not a list of them) is made a list of one
    if np.isscalar(condlist) or is_engine_array(condlist) or (
            not isinstance(condlist[0], (list, np.ndarray)) and not is_engine_array(condlist[0])
            and ndim_of(x) != 0):
        condlist = [condlist]
    condlist = [np.asarray(c, bool) if not is_engine_array(c) else c for c in condlist]
    n = len(condlist)
    if len(funclist) not in (n, n + 1):
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are "
                         f"expected")
    if len(funclist) == n + 1:
        anyof = condlist[0]
        for c in condlist[1:]:
            anyof = anyof | c
        condlist = condlist + [~anyof]
    y = np.zeros_like(x)
    for condition, function in zip(condlist, funclist, strict=True):
        if not callable(function):
            y[condition] = function
            continue
        selected = x[condition]
        if selected.size > 0:
            y[condition] = function(selected, *args, **kw)
    return y


def _condition(condition):
    """A condition's values, as booleans (read off an engine's array)."""
    return np.asarray(primal(condition), bool)


@composition(np.compress)
def _compress(condition, a, axis=None):
    """The slices along axis (of the flattened array for None) where condition holds:
    np.take of their positions (a condition shorter than the axis leaves out the rest).
    (out= is the engines': the result written there.)"""
    condition = _condition(condition)
    if condition.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    return np.take(a, np.nonzero(condition)[0], axis)


@composition(np.extract)
def _extract(condition, arr):
    """The elements of arr where condition is true, both flattened (np.take of their
    positions)."""
    return np.take(np.reshape(arr, -1), np.nonzero(np.ravel(_condition(condition)))[0])


# -- ordering ---------------------------------------------------------------------------------

@constant(np.argpartition)
def _argpartition(a, kth, axis=-1, kind="introselect", order=None):
    return np.argpartition(a, kth, axis, kind, order)


@composition(np.partition)
def _partition(a, kth, axis=-1, kind="introselect", order=None):
    """The elements in the order np.argpartition gives: the kth elements exact."""
    if axis is None:
        a, axis = np.reshape(a, -1), -1
    return np.take_along_axis(a, np.argpartition(a, kth, axis, kind, order), axis)


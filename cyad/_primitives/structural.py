"""Linear and structural NumPy functions, each declared once with its transpose.

Every ``impl`` takes operands that may carry ``extra`` trailing axes (the lanes of
a tangent), so the same call maps values and tangents; its parameters come from
``bind`` normalised against the values (non-negative axes, resolved shapes). An
engine calls ``impl`` on plain ndarrays (values and tangents), so it may use their
methods, which skip NumPy's dispatch.
Shape and dtype queries and rounding, whose results carry no derivative, are here too.
"""
import numpy as np

from cyad._dual.array import primal
from cyad._primitives._table import (
    axes_of,
    axis_of,
    composition,
    constant,
    is_engine_array,
    linear,
    shape_query,
    ndim_of,
    shape_of,
    trailing,
    unbroadcast,
)

# -- values only ------------------------------------------------------------------------


@shape_query(np.shape)
def _shape(a):
    return np.shape(a)


@shape_query(np.ndim)
def _ndim(a):
    return np.ndim(a)


@shape_query(np.size)
def _size(a, axis=None):
    return np.size(a, axis)


# dtypes: NumPy 2 promotes arrays by their dtypes alone, 0-d ones too (NEP 50)


@shape_query(np.result_type)
def _result_type(*arrays_and_dtypes):
    return np.result_type(*arrays_and_dtypes)


@shape_query(np.can_cast)
def _can_cast(from_, to, casting="safe"):
    return np.can_cast(from_, to, casting)


@composition(np.min_scalar_type)
class _min_scalar_type:
    """An array's dtype; of a 0-d array, the smallest float dtype its value fits in by
    NumPy's bounds, read off the value (an engine that records f checks the comparisons on
    every replay)."""

    note = "value only: a dtype, read off the value of a 0-d array"

    def impl(a, /):
        if not is_engine_array(a):
            return np.min_scalar_type(a)
        dtype = np.dtype(a.dtype)
        if ndim_of(a) > 0:
            return dtype
        if bool(((a > -65000.0) & (a < 65000.0)) | ~np.isfinite(a)):
            return np.dtype(np.float16)
        if dtype == np.float64 and bool((a > -3.4e38) & (a < 3.4e38)):
            return np.dtype(np.float32)
        return dtype


@constant(np.round, np.around)
def _round(a, decimals=0):
    """Rounded values; the derivative is zero (as for np.rint)."""
    return np.round(a, decimals)


# positions, orders and counts, read off the values


@constant(np.argsort)
def _argsort(a, axis=-1, kind=None):
    return np.argsort(a, axis=axis, kind=kind)


@constant(np.argmax)
def _argmax(a, axis=None, *, keepdims=False):
    return np.argmax(a, axis, keepdims=keepdims)


@constant(np.argmin)
def _argmin(a, axis=None, *, keepdims=False):
    return np.argmin(a, axis, keepdims=keepdims)


@constant(np.searchsorted)
def _searchsorted(a, v, side="left", sorter=None):
    return np.searchsorted(a, v, side, sorter)


@constant(np.count_nonzero)
def _count_nonzero(a, axis=None, *, keepdims=False):
    return np.count_nonzero(a, axis, keepdims=keepdims)


@constant(np.any)
def _any(a, axis=None, *, keepdims=False):
    return np.any(a, axis, keepdims=keepdims)


@constant(np.all)
def _all(a, axis=None, *, keepdims=False):
    return np.all(a, axis, keepdims=keepdims)


# -- reductions ---------------------------------------------------------------------------

@linear(np.sum)
class _sum:
    """The sum, of the elements `where` selects (the others as zeros), plus `initial` (an
    operand of its own when given)."""

    def bind(a, axis=None, *, keepdims=False, initial=None, where=True):
        axes = axes_of(axis, ndim_of(a))
        if where is not True:
            a = np.where(where, a, 0.0)
        return (a,) if initial is None else (a, initial), {"axes": axes, "keepdims": keepdims}

    def impl(x, *initial, axes, keepdims, extra=0):
        # the ufunc's reduce itself: np.sum's Python-level wrapper costs as much as the sum
        total = np.add.reduce(x, axes, keepdims=keepdims)
        return total + initial[0] if initial else total

    def transpose(ct, shapes, *, axes, keepdims):
        shape = shapes[0]
        spread = np.broadcast_to(ct if keepdims else np.expand_dims(ct, axes), shape)
        return (spread,) if len(shapes) == 1 else (spread, np.reshape(np.sum(ct), shapes[1]))


@linear(np.cumsum)
class _cumsum:
    def bind(a, axis=None):
        if axis is None:
            return (a,), {"axis": 0, "flat": True}
        return (a,), {"axis": axis_of(axis, ndim_of(a)), "flat": False}

    def impl(x, *, axis, flat, extra=0):
        if flat:
            x = np.reshape(x, (-1,) + trailing(x, extra))
        return np.cumsum(x, axis)

    def transpose(ct, shapes, *, axis, flat):
        # the sums of the cotangents from every index on: a reversed cumsum
        r = np.flip(np.cumsum(np.flip(ct, axis), axis), axis)
        return (np.reshape(r, shapes[0]),)


@linear(np.diff)
class _diff:
    """np.diff of the concatenation of prepend, a and append (scalars spread as an edge)."""

    def bind(a, n=1, axis=-1, prepend=None, append=None):
        ndim = ndim_of(a)
        axis = axis_of(axis, ndim)
        edge = list(shape_of(a))
        edge[axis] = 1
        pieces = tuple(x for x in (prepend, a, append) if x is not None)
        return pieces, {"n": n, "axis": axis, "edge": tuple(edge), "ndim": ndim}

    def impl(*pieces, n, axis, edge, ndim, extra=0):
        pieces = [np.broadcast_to(p, edge + trailing(p, extra)) if p.ndim - extra == 0 else p
                  for p in pieces]
        return np.diff(np.concatenate(pieces, axis), n, axis)

    def transpose(ct, shapes, *, n, axis, edge, ndim):
        for _ in range(n):   # the adjoint of one difference: minus the difference of the padded
            zero = np.zeros(shape_of(ct)[:axis] + (1,) + shape_of(ct)[axis + 1:], ct.dtype)
            ct = -np.diff(np.concatenate([zero, ct, zero], axis), 1, axis)
        result, start = [], 0
        for shape in shapes:
            size = 1 if len(shape) == 0 else shape[axis]
            piece = ct[(slice(None),) * axis + (slice(start, start + size),)]
            result.append(np.sum(piece) if len(shape) == 0 else piece)
            start += size
        return tuple(result)


@linear(np.trace)
class _trace:
    def bind(a, offset=0, axis1=0, axis2=1):
        ndim = ndim_of(a)
        return (a,), {"offset": offset, "axis1": axis_of(axis1, ndim),
                      "axis2": axis_of(axis2, ndim)}

    def impl(x, *, offset, axis1, axis2, extra=0):
        return np.trace(x, offset, axis1, axis2)

    def transpose(ct, shapes, *, offset, axis1, axis2):
        # ct on the offset diagonal of the two axes (moved last, then back), 0 elsewhere
        shape = shapes[0]
        rows, columns = shape[axis1], shape[axis2]
        diagonal = np.eye(rows, columns, offset, dtype=bool)
        spread = np.expand_dims(ct, (-2, -1)) * np.asarray(diagonal, ct.dtype)
        return (np.moveaxis(spread, (-2, -1), (axis1, axis2)),)


# -- selection ----------------------------------------------------------------------------

@linear(np.where)
class _where:
    """np.where(condition, x, y), linear in x and y; with the condition alone, np.nonzero."""

    def bind(condition, x=None, y=None):
        condition = np.asarray(primal(condition))
        if x is None and y is None:
            return (), {"condition": condition}
        if x is None or y is None:
            raise ValueError("either both or neither of x and y should be given")
        return (x, y), {"condition": condition}

    def impl(*xy, condition, extra=0):
        if not xy:
            return np.nonzero(condition)
        x, y = xy
        return np.where(np.reshape(condition, condition.shape + (1,) * extra), x, y)

    def transpose(ct, shapes, *, condition):
        zero = np.zeros((), ct.dtype)
        return (unbroadcast(np.where(condition, ct, zero), shapes[0]),
                unbroadcast(np.where(condition, zero, ct), shapes[1]))


@linear(np.take_along_axis)
class _take_along_axis:
    def bind(arr, indices, axis=-1):
        indices = np.asarray(primal(indices))
        if axis is None:
            return (np.ravel(arr),), {"indices": indices, "axis": 0}
        return (arr,), {"indices": indices, "axis": axis_of(axis, ndim_of(arr))}

    def impl(x, *, indices, axis, extra=0):
        return np.take_along_axis(x, np.reshape(indices, indices.shape + (1,) * extra), axis)

    def transpose(ct, shapes, *, indices, axis):
        z = np.zeros(shapes[0], ct.dtype)
        ct = np.asarray(ct)
        index = list(np.indices(ct.shape, sparse=True))
        index[axis] = np.broadcast_to(indices, ct.shape)
        np.add.at(z, tuple(index), ct)
        return (z,)


@linear(np.diag)
class _diag:
    def bind(v, k=0):
        if ndim_of(v) not in (1, 2):
            raise ValueError("Input must be 1- or 2-d.")
        return (v,), {"k": k, "vector": ndim_of(v) == 1}

    def impl(x, *, k, vector, extra=0):
        if not vector:   # the diagonal k of a matrix (np.diagonal puts it last)
            return np.moveaxis(np.diagonal(x, k, 0, 1), -1, 0)
        n = x.shape[0]
        z = np.zeros((n + abs(k), n + abs(k)) + x.shape[1:], x.dtype)
        i = np.arange(n)
        z[i + max(-k, 0), i + max(k, 0)] = x
        return z

    def transpose(ct, shapes, *, k, vector):
        if vector:
            return (np.diagonal(ct, k).copy(),)
        z = np.zeros(shapes[0], ct.dtype)
        n = len(ct)
        i = np.arange(n)
        z[i + max(-k, 0), i + max(k, 0)] = ct
        return (z,)


# -- joining --------------------------------------------------------------------------------

@linear(np.concatenate)
class _concatenate:
    def bind(arrays, axis=0):
        arrays = tuple(arrays)
        if axis is None:
            return arrays, {"axis": 0, "flat": True}
        return arrays, {"axis": axis_of(axis, ndim_of(arrays[0])), "flat": False}

    def impl(*arrays, axis, flat, extra=0):
        if flat:
            arrays = [np.reshape(x, (-1,) + trailing(x, extra)) for x in arrays]
        return np.concatenate(arrays, axis)

    def transpose(ct, shapes, *, axis, flat):
        sizes = [int(np.prod(s)) if flat else s[axis] for s in shapes]
        pieces = np.split(ct, np.cumsum(sizes)[:-1], axis)
        return tuple(np.reshape(p, s) for p, s in zip(pieces, shapes, strict=True))


@linear(np.stack)
class _stack:
    def bind(arrays, axis=0):
        arrays = tuple(arrays)
        return arrays, {"axis": axis_of(axis, ndim_of(arrays[0]) + 1)}

    def impl(*arrays, axis, extra=0):
        return np.stack(arrays, axis)

    def transpose(ct, shapes, *, axis):
        return tuple(np.take(ct, i, axis) for i in range(len(shapes)))


# -- shape and layout -----------------------------------------------------------------------

def check_order(function, order):
    # order C and F reshape every lane alike; A and K depend on the memory layout
    if order not in ("C", "F"):
        raise TypeError(f"cyad: numpy.{function} on dual arrays supports order 'C' and 'F', "
                        f"not {order!r}")


@linear(np.reshape)
class _reshape:
    def bind(a, shape, order="C"):
        check_order("reshape", order)
        # a -1 stays: the lanes, trailing, leave NumPy the same axis to work out
        return (a,), {"shape": tuple(shape) if isinstance(shape, (tuple, list)) else (shape,),
                      "order": order}

    def impl(x, *, shape, order, extra=0):
        return x.reshape(shape + trailing(x, extra), order=order)

    def transpose(ct, shapes, *, shape, order):
        return (np.reshape(ct, shapes[0], order=order),)


@linear(np.transpose)
class _transpose:
    def bind(a, axes=None):
        ndim = ndim_of(a)
        if axes is None:
            return (a,), {"axes": tuple(reversed(range(ndim)))}
        axes = tuple(axis_of(i, ndim) for i in axes)
        if sorted(axes) != list(range(ndim)):
            raise ValueError("axes don't match array")
        return (a,), {"axes": axes}

    def impl(x, *, axes, extra=0):
        return x.transpose(axes + tuple(range(len(axes), x.ndim)))

    def transpose(ct, shapes, *, axes):
        return (np.transpose(ct, np.argsort(axes)),)


@linear(np.flip)
class _flip:
    def bind(m, axis=None):
        return (m,), {"axes": axes_of(axis, ndim_of(m))}

    def impl(x, *, axes, extra=0):
        return np.flip(x, axes)

    def transpose(ct, shapes, *, axes):
        return (np.flip(ct, axes),)


@linear(np.broadcast_to)
class _broadcast_to:
    def bind(array, shape):
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return (array,), {"shape": shape}

    def impl(x, *, shape, extra=0):
        return np.broadcast_to(x, shape + trailing(x, extra))

    def transpose(ct, shapes, *, shape):
        return (unbroadcast(ct, shapes[0]),)


@linear(np.copy)
class _copy:
    def bind(a):
        return (a,), {}

    def impl(x, *, extra=0):
        return x.copy()

    def transpose(ct, shapes):
        return (ct,)

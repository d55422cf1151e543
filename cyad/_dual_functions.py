"""NumPy functions on dual arrays (the `__array_function__` table).

Every function here computes the values with NumPy on the values and the
partials with NumPy on the partials, whose extra trailing axis holds the `width`
derivative lanes: axis arguments refer to the values, so they are normalised
against the values' dimensions before they touch the partials. Matrix products
and solves hand all lanes to one BLAS/LAPACK call.

Operands that are not dual arrays are constants (zero partials). Results take
NumPy's promotion of the values, as float64 or float32.

Duals of two differentiations (one running inside the other) are first made duals
of their nested tag (`cyad._dual.promote`); a function linear in its dual operands
then needs nothing more, since it treats every lane alike. The bilinear products
add the second-order cross terms; the other nonlinear functions are registered with
``second_order=False`` and refuse nested duals.
"""
import functools
import inspect
import sys

import numpy as np

try:
    from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index
    from numpy.core.numeric import normalize_axis_tuple

from cyad._dual import Dual, float_dtype, make_dual, primal, promote

HANDLED_FUNCTIONS = {}

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def implements(numpy_function, second_order=True, promote=True):
    """Register the decorated function as `numpy_function` on dual arrays.

    Its parameters carry NumPy's names, in NumPy's positions, but only those it
    supports: a call passing any other argument (other than at NumPy's default)
    raises TypeError naming the function and the argument. With
    ``second_order=False`` it refuses nested duals; with ``promote=False`` its
    arguments are not made duals of one differentiation first (for a function that
    writes into one of them).

    Where NumPy's function has an ``out`` parameter, so does this one: the result is
    computed apart, then copied into ``out``, so ``out`` may share memory with any
    operand (as in NumPy).
    """
    def register(impl):
        parameters = inspect.signature(impl).parameters.values()
        accepted = frozenset(p.name for p in parameters)
        if any(p.kind is p.VAR_POSITIONAL for p in parameters):
            positional = sys.maxsize
        else:
            positional = sum(p.kind in _POSITIONAL for p in parameters)
        numpy_names = list(inspect.signature(numpy_function).parameters)
        out_position = numpy_names.index("out") if "out" in numpy_names else None

        @functools.wraps(impl)
        def checked(*args, **kwargs):
            out = None
            if out_position is not None:
                if len(args) > out_position:
                    # a positional out: the arguments behind it go by name
                    kwargs.update(zip(numpy_names[out_position + 1:], args[out_position + 1:]))
                    args, out = args[:out_position], args[out_position]
                else:
                    out = kwargs.pop("out", None)
            # one dual alone (np.sum(x), x.reshape(...)) belongs to one differentiation
            if promote and (len(args) != 1 or type(args[0]) is not Dual):
                if len(_tags(args)) > 1:
                    args = _promoted(args)
            if not second_order and any(tag.is_nested for tag in _tags(args)):
                raise TypeError(f"cyad: {_name(numpy_function)} of dual arrays of a nested "
                                "differentiation (second order) is not supported")
            if len(args) <= positional and accepted.issuperset(kwargs):
                result = impl(*args, **kwargs)
            else:
                result = impl(**_supported_arguments(numpy_function, accepted, args, kwargs))
            return result if out is None else _into(out, result)

        HANDLED_FUNCTIONS[numpy_function] = checked
        return impl
    return register


def _supported_arguments(numpy_function, accepted, args, kwargs):
    # the call's arguments by name, once the unsupported ones are found at NumPy's defaults
    signature = inspect.signature(numpy_function)
    supported = {}
    for name, value in signature.bind(*args, **kwargs).arguments.items():
        parameter = signature.parameters[name]
        if name in accepted:
            supported[name] = value
            continue
        if parameter.kind is parameter.VAR_KEYWORD:
            name = next(iter(value))
        elif value is parameter.default:
            continue
        raise TypeError(f"cyad: {_name(numpy_function)} does not support the "
                        f"argument {name!r} on dual arrays")
    return supported


def _name(numpy_function):
    module = getattr(numpy_function, "__module__", None) or "numpy"
    return f"{module}.{numpy_function.__name__}"


def _tags(args):
    # the tags of the duals among the arguments (and in a list or tuple argument)
    tags = set()
    for x in args:
        if isinstance(x, Dual):
            tags.add(x.tag)
        elif isinstance(x, (list, tuple)):
            tags.update(y.tag for y in x if isinstance(y, Dual))
    return tags


def _promoted(args):
    # the arguments with all their duals made duals of one (nested) tag
    flat = [y for x in args for y in (x if isinstance(x, (list, tuple)) else (x,))]
    done = iter(promote(*flat))
    return tuple([type(x)(next(done) for _ in x) if isinstance(x, (list, tuple)) else next(done)
                  for x in args])


# -- helpers ----------------------------------------------------------------------

def _common(operands):
    """The dual among `operands` whose differentiation the result joins, and the result dtype."""
    like = next(x for x in operands if isinstance(x, Dual))
    values = [primal(x) if isinstance(x, (Dual, np.ndarray, np.generic, int, float))
              else np.asarray(x) for x in operands]
    return like, float_dtype(np.result_type(*values))


def _parts(x, dtype):
    """Values and partials of an operand in `dtype`; the partials of a constant are None."""
    if isinstance(x, Dual):
        return x.values.astype(dtype, copy=False), x.partials.astype(dtype, copy=False)
    return np.asarray(x, dtype), None


def _filled(x, dtype, width):
    """`_parts` with zero partials for a constant (a broadcast view, nothing allocated)."""
    values, partials = _parts(x, dtype)
    if partials is None:
        partials = np.broadcast_to(np.zeros((), dtype), values.shape + (width,))
    return values, partials


def _result(values, partials, like):
    return make_dual(np.asarray(values), partials, like)


def _constant(values, like):
    """Values as a dual of `like`'s differentiation with zero partials."""
    values = np.asarray(values)
    return make_dual(values, np.zeros(values.shape + (like.width,), values.dtype), like)


def _into(out, result):
    """`out=` of a function: the result copied into a dual `out`, or the result itself."""
    if out is None:
        return result
    if not isinstance(out, Dual):
        raise TypeError("cyad: out= of a NumPy function on dual arrays must be a dual array "
                        "(a plain ndarray would lose the derivative)")
    if out.shape != np.shape(primal(result)):
        raise ValueError(f"cyad: output of shape {out.shape} cannot hold a result of shape "
                         f"{np.shape(primal(result))}")
    out[...] = result
    return out


def _axes(axis, ndim):
    """`axis` of a NumPy call (None: all) as a tuple of non-negative value axes."""
    return tuple(range(ndim)) if axis is None else normalize_axis_tuple(axis, ndim)


def _merge_axes(x, axes, ndim):
    """x with its value axes `axes` moved behind the other value axes and merged into one.

    The values (ndim axes) become (kept..., n), the partials (kept..., n, width).
    """
    k = len(axes)
    x = np.moveaxis(x, axes, range(ndim - k, ndim))
    return x.reshape(x.shape[:ndim - k] + (-1,) + x.shape[ndim:])


def _lanes_result(values, lanes, like):
    """A dual of `values` whose partials are `lanes` reshaped to values.shape + (width,):
    the lane rows of a reduction, or of a product with NumPy's unit axes still in."""
    values = np.asarray(values)
    return make_dual(values, lanes.reshape(values.shape + (like.width,)), like)


def _at_least(values, partials, ndim):
    # np.atleast_1d / np.atleast_2d: leading unit axes
    if values.ndim >= ndim:
        return values, partials
    shape = (1,) * (ndim - values.ndim) + values.shape
    return values.reshape(shape), partials.reshape(shape + partials.shape[-1:])


# -- shape queries ------------------------------------------------------------------

@implements(np.shape)
def _shape(a):
    return a.values.shape


@implements(np.ndim)
def _ndim(a):
    return a.values.ndim


@implements(np.size)
def _size(a, axis=None):
    return np.size(a.values, axis)


# -- reductions -----------------------------------------------------------------------

@implements(np.sum)
def _sum(a, axis=None, *, keepdims=False):
    axes = _axes(axis, a.ndim)
    # the ufunc's reduce itself: np.sum's Python-level wrapper costs as much as the sum here
    return _result(np.add.reduce(a.values, axes, keepdims=keepdims),
                   np.add.reduce(a.partials, axes, keepdims=keepdims), a)


@implements(np.mean)
def _mean(a, axis=None, *, keepdims=False):
    axes = _axes(axis, a.ndim)
    return _result(np.mean(a.values, axes, keepdims=keepdims),
                   np.mean(a.partials, axes, keepdims=keepdims), a)


@implements(np.prod, second_order=False)
def _prod(a, axis=None, *, keepdims=False):
    # d prod = sum_i (product of the other elements) dx_i: exact, zeros included
    axes = _axes(axis, a.ndim)
    others = _products_of_others(_merge_axes(a.values, axes, a.ndim))
    lanes = np.matmul(others[..., None, :], _merge_axes(a.partials, axes, a.ndim))
    return _lanes_result(np.prod(a.values, axes, keepdims=keepdims), lanes, a)


def _products_of_others(x):
    """For every x[..., i], the product of the x[..., j], j != i (no division)."""
    ones = np.ones_like(x[..., :1])
    before = np.cumprod(np.concatenate([ones, x[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, x[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return before * after


@implements(np.max)
@implements(np.amax)
def _max(a, axis=None, *, keepdims=False):
    """The partials of the selected element; among equal maxima, of the first one."""
    return _extreme(a, axis, keepdims, np.max, np.argmax)


@implements(np.min)
@implements(np.amin)
def _min(a, axis=None, *, keepdims=False):
    """The partials of the selected element; among equal minima, of the first one."""
    return _extreme(a, axis, keepdims, np.min, np.argmin)


def _extreme(a, axis, keepdims, reduce, arg):
    axes = _axes(axis, a.ndim)
    at = arg(_merge_axes(a.values, axes, a.ndim), axis=-1)
    lanes = np.take_along_axis(_merge_axes(a.partials, axes, a.ndim), at[..., None, None], -2)
    return _lanes_result(reduce(a.values, axes, keepdims=keepdims), lanes, a)


@implements(np.cumsum)
def _cumsum(a, axis=None):
    values, partials = a.values, a.partials
    if axis is None:
        values, partials, axis = values.ravel(), partials.reshape(-1, a.width), 0
    axis = normalize_axis_index(axis, values.ndim)
    return _result(np.cumsum(values, axis), np.cumsum(partials, axis), a)


@implements(np.diff)
def _diff(a, n=1, axis=-1, prepend=None, append=None):
    like, pieces = _pieces([x for x in (prepend, a, append) if x is not None])
    axis = normalize_axis_index(axis, np.ndim(primal(a)))
    edge = list(np.shape(primal(a)))
    edge[axis] = 1
    # a scalar prepend or append stands for a slice of it, as in NumPy
    pieces = [(np.broadcast_to(v, edge), np.broadcast_to(p, edge + [like.width])) if v.ndim == 0
              else (v, p) for v, p in pieces]
    values, partials = _concatenated(pieces, axis)
    return _result(np.diff(values, n, axis), np.diff(partials, n, axis), like)


@implements(np.trace)
def _trace(a, offset=0, axis1=0, axis2=1):
    axis1, axis2 = (normalize_axis_index(axis, a.ndim) for axis in (axis1, axis2))
    return _result(np.trace(a.values, offset, axis1, axis2),
                   np.trace(a.partials, offset, axis1, axis2), a)


# -- products -------------------------------------------------------------------------

def _const_times_partials(c, p):
    """c @ dB for every lane: c (..., m, k), p (..., k, n, W) -> (..., m, n, W), one matmul."""
    n, width = p.shape[-2:]
    r = np.matmul(c, p.reshape(p.shape[:-2] + (n * width,)))
    return r.reshape(r.shape[:-1] + (n, width))


def _partials_times_const(p, c):
    """dA @ c for every lane: p (..., m, k, W), c (..., k, n) -> (..., m, n, W), one matmul."""
    m, k, width = p.shape[-3:]
    rows = np.moveaxis(p, -1, -2).reshape(p.shape[:-3] + (m * width, k))
    r = np.matmul(rows, c)
    r = r.reshape(r.shape[:-2] + (m, width, r.shape[-1]))
    return np.ascontiguousarray(np.swapaxes(r, -1, -2))


def _product_rule(da_b, a_db):
    """dA b + a dB, where the term of a constant operand is None."""
    if da_b is None:
        return a_db
    return da_b if a_db is None else da_b + a_db


def _with_cross_terms(partials, like, ap, bp, da_b, a_db):
    """A bilinear product's partials with the second-order terms of nested duals added.

    da_b(p, v) and a_db(v, p) are the product of lanes p by values v and of values
    by lanes. Along inner direction j and outer direction k the product of nested
    duals A and B gains A.b[j] B.a[k] + A.a[k] B.b[j].
    """
    tag = like.tag
    if not tag.is_nested or ap is None or bp is None:
        return partials
    outer, inner = tag.outer.width, tag.inner.width
    partials = np.array(partials)
    for j in range(inner):
        lane, cross = outer + j, outer + inner + j * outer
        partials[..., cross:cross + outer] += (a_db(ap[..., lane], bp[..., :outer])
                                               + da_b(ap[..., :outer], bp[..., lane]))
    return partials


@implements(np.matmul)
def _matmul(x1, x2):
    like, dtype = _common((x1, x2))
    (av, ap), (bv, bp) = _parts(x1, dtype), _parts(x2, dtype)
    values = np.matmul(av, bv)
    # 1-d operands as NumPy promotes them: a row (1, k) and a column (k, 1)
    if av.ndim == 1:
        av, ap = av[None], None if ap is None else ap[None]
    if bv.ndim == 1:
        bv, bp = bv[:, None], None if bp is None else bp[:, None]
    partials = _product_rule(None if ap is None else _partials_times_const(ap, bv),
                             None if bp is None else _const_times_partials(av, bp))
    partials = _with_cross_terms(partials, like, ap, bp, _partials_times_const,
                                 _const_times_partials)
    return _lanes_result(values, partials, like)


def _contracted(a, b, b_axis):
    # values and partials of the sum over the last axis of a and axis b_axis of b (np.tensordot)
    like, dtype = _common((a, b))
    (av, ap), (bv, bp) = _parts(a, dtype), _parts(b, dtype)
    axes = ([av.ndim - 1], [b_axis])

    def da_b(p, v):
        # in tensordot(p, v) the lane axis lands behind a's kept axes: move it last
        return np.moveaxis(np.tensordot(p, v, axes), av.ndim - 1, -1)

    def a_db(v, p):
        return np.tensordot(v, p, axes)

    partials = _product_rule(None if ap is None else da_b(ap, bv),
                             None if bp is None else a_db(av, bp))
    partials = _with_cross_terms(partials, like, ap, bp, da_b, a_db)
    return _result(np.tensordot(av, bv, axes), np.ascontiguousarray(partials), like)


@implements(np.dot)
def _dot(a, b):
    if not isinstance(a, Dual) and not isinstance(b, Dual):  # only out is dual
        return np.dot(a, b)
    if np.ndim(primal(a)) == 0 or np.ndim(primal(b)) == 0:
        return np.multiply(a, b)
    return _contracted(a, b, max(np.ndim(primal(b)) - 2, 0))


@implements(np.inner)
def _inner(a, b):
    if np.ndim(primal(a)) == 0 or np.ndim(primal(b)) == 0:
        return np.multiply(a, b)
    return _contracted(a, b, np.ndim(primal(b)) - 1)


@implements(np.outer)
def _outer(a, b):
    return np.multiply(np.reshape(a, (-1, 1)), np.reshape(b, (1, -1)))


# -- selection ------------------------------------------------------------------------

@implements(np.where)
def _where(condition, x=None, y=None):
    condition = primal(condition)
    if x is None and y is None:
        return np.nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    if not isinstance(x, Dual) and not isinstance(y, Dual):
        return np.where(condition, x, y)
    like, ((xv, xp), (yv, yp)) = _pieces((x, y))
    condition = np.asarray(condition)
    return _result(np.where(condition, xv, yv), np.where(condition[..., None], xp, yp), like)


@implements(np.clip)
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


@implements(np.round)
@implements(np.around)
def _round(a, decimals=0):
    """Rounded values; the derivative is zero (as for np.rint)."""
    return _constant(np.round(a.values, decimals), a)


@implements(np.diag)
def _diag(v, k=0):
    values = np.diag(v.values, k)
    if v.ndim == 1:  # a matrix with v on diagonal k
        partials = np.zeros(values.shape + (v.width,), values.dtype)
        i = np.arange(v.size)
        partials[i + max(-k, 0), i + max(k, 0)] = v.partials
    else:
        partials = np.moveaxis(np.diagonal(v.partials, k, 0, 1), 0, -1)
    return _result(values, partials, v)


# -- joining --------------------------------------------------------------------------

def _pieces(arrays):
    """The dual joining `arrays` and their values and partials in the result dtype."""
    like, dtype = _common(arrays)
    return like, [_filled(x, dtype, like.width) for x in arrays]


def _concatenated(pieces, axis):
    values = np.concatenate([v for v, _ in pieces], axis)
    axis = normalize_axis_index(axis, values.ndim)
    return values, np.concatenate([p for _, p in pieces], axis)


@implements(np.concatenate)
def _concatenate(arrays, axis=0):
    like, pieces = _pieces(arrays)
    if axis is None:
        pieces, axis = [(v.ravel(), p.reshape(-1, like.width)) for v, p in pieces], 0
    return _result(*_concatenated(pieces, axis), like)


@implements(np.stack)
def _stack(arrays, axis=0):
    like, pieces = _pieces(arrays)
    values = np.stack([v for v, _ in pieces], axis)
    axis = normalize_axis_index(axis, values.ndim)
    return _result(values, np.stack([p for _, p in pieces], axis), like)


@implements(np.hstack)
def _hstack(tup):
    like, pieces = _pieces(tup)
    pieces = [_at_least(v, p, 1) for v, p in pieces]
    return _result(*_concatenated(pieces, 0 if pieces[0][0].ndim == 1 else 1), like)


@implements(np.vstack)
def _vstack(tup):
    like, pieces = _pieces(tup)
    return _result(*_concatenated([_at_least(v, p, 2) for v, p in pieces], 0), like)


def _atleast(arys, ndim, plain):
    results = [make_dual(*_at_least(x.values, x.partials, ndim), x) if isinstance(x, Dual)
               else plain(x) for x in arys]
    return results[0] if len(results) == 1 else tuple(results)


@implements(np.atleast_1d)
def _atleast_1d(*arys):
    return _atleast(arys, 1, np.atleast_1d)


@implements(np.atleast_2d)
def _atleast_2d(*arys):
    return _atleast(arys, 2, np.atleast_2d)


# -- shape and layout -------------------------------------------------------------------

def _check_order(function, order):
    # order C and F reshape every lane alike; A and K depend on the memory layout
    if order not in ("C", "F"):
        raise TypeError(f"cyad: numpy.{function} on dual arrays supports order 'C' and 'F', "
                        f"not {order!r}")


def _reshaped(a, values, order):
    # the partials reshaped like `values`, a reshape of a's values in `order`
    return _result(values, np.reshape(a.partials, values.shape + (a.width,), order=order), a)


@implements(np.reshape)
def _reshape(a, shape, order="C"):
    _check_order("reshape", order)
    return _reshaped(a, np.reshape(a.values, shape, order=order), order)


@implements(np.ravel)
def _ravel(a, order="C"):
    _check_order("ravel", order)
    return _reshaped(a, np.ravel(a.values, order), order)


@implements(np.transpose)
def _transpose(a, axes=None):
    values = np.transpose(a.values, axes)
    order = tuple(reversed(range(a.ndim))) if axes is None else normalize_axis_tuple(axes, a.ndim)
    return _result(values, np.transpose(a.partials, order + (a.ndim,)), a)


@implements(np.swapaxes)
def _swapaxes(a, axis1, axis2):
    axis1, axis2 = (normalize_axis_index(axis, a.ndim) for axis in (axis1, axis2))
    return _result(np.swapaxes(a.values, axis1, axis2), np.swapaxes(a.partials, axis1, axis2), a)


@implements(np.moveaxis)
def _moveaxis(a, source, destination):
    source, destination = (normalize_axis_tuple(axes, a.ndim) for axes in (source, destination))
    return _result(np.moveaxis(a.values, source, destination),
                   np.moveaxis(a.partials, source, destination), a)


@implements(np.squeeze)
def _squeeze(a, axis=None):
    if axis is None:
        axes = tuple(i for i, n in enumerate(a.shape) if n == 1)
    else:
        axes = normalize_axis_tuple(axis, a.ndim)
    return _result(np.squeeze(a.values, axes), np.squeeze(a.partials, axes), a)


@implements(np.expand_dims)
def _expand_dims(a, axis):
    values = np.expand_dims(a.values, axis)
    axes = normalize_axis_tuple(axis, values.ndim)
    return _result(values, np.expand_dims(a.partials, axes), a)


@implements(np.flip)
def _flip(m, axis=None):
    axes = _axes(axis, m.ndim)
    return _result(np.flip(m.values, axes), np.flip(m.partials, axes), m)


@implements(np.broadcast_to)
def _broadcast_to(array, shape):
    values = np.broadcast_to(array.values, shape)
    return _result(values, np.broadcast_to(array.partials, values.shape + (array.width,)), array)


@implements(np.copyto, promote=False)
def _copyto(dst, src, casting="same_kind", where=True):
    """dst[...] = src where `where` is true, both broadcast to dst's shape; src may
    overlap dst (it is read in full first, as in NumPy)."""
    if not isinstance(dst, Dual):
        raise TypeError("cyad: numpy.copyto of a dual array into a plain ndarray would lose "
                        "the derivative; copy into a dual array (np.zeros_like(x))")
    src_dtype = np.result_type(primal(src))
    if not np.can_cast(src_dtype, dst.dtype, casting):
        raise TypeError(f"Cannot cast array data from {src_dtype!r} to {dst.dtype!r} "
                        f"according to the rule {casting!r}")
    if where is True:
        dst[...] = src
        return
    mask = np.broadcast_to(np.asarray(primal(where), dtype=bool), dst.shape)
    dst[mask] = np.broadcast_to(src, dst.shape)[mask]


@implements(np.copy)
def _copy(a):
    return _result(a.values.copy(), a.partials.copy(), a)


# -- new arrays shaped like a dual ------------------------------------------------------

def _like_result(values, a, fill=None):
    """A *_like function's result: a dual of a's differentiation for a float dtype,
    the plain array for bool or integer (which carry no derivative)."""
    if values.dtype.kind in "biu" and not isinstance(fill, Dual):
        return values
    if values.dtype not in (np.float32, np.float64):
        raise TypeError(f"cyad: dual arrays hold float64 or float32, not {values.dtype}")
    if not isinstance(fill, Dual):
        return _constant(values, a)
    fill, a = promote(fill, a)
    partials = np.broadcast_to(fill.partials.astype(values.dtype, copy=False),
                               values.shape + (a.width,))
    return _result(values, partials.copy(), a)


@implements(np.zeros_like)
def _zeros_like(a, dtype=None, *, shape=None):
    return _like_result(np.zeros_like(a.values, dtype, shape=shape), a)


@implements(np.ones_like)
def _ones_like(a, dtype=None, *, shape=None):
    return _like_result(np.ones_like(a.values, dtype, shape=shape), a)


@implements(np.empty_like)
def _empty_like(prototype, dtype=None, *, shape=None):
    return _like_result(np.empty_like(prototype.values, dtype, shape=shape), prototype)


@implements(np.full_like)
def _full_like(a, fill_value, dtype=None, *, shape=None):
    values = np.full_like(a.values, primal(fill_value), dtype, shape=shape)
    return _like_result(values, a, fill_value)


# -- linear algebra -------------------------------------------------------------------

@implements(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    if axis is None and ord is not None and x.ndim not in (1, 2):
        raise ValueError("Improper number of dimensions to norm.")
    axes = _axes(axis, x.ndim)
    if ord is None:  # the 2-norm of the flattened axes (Frobenius for two)
        return _two_norm(x, axes, keepdims)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _two_norm(x, axes, keepdims):
    # sqrt's infinite slope at 0 meets a zero tangent there: the gradient at 0 is 0
    return np.sqrt(np.sum(x * x, axes, keepdims=keepdims))


def _vector_norm(x, ord, axes, keepdims):
    if isinstance(ord, str):
        raise TypeError(f"cyad: numpy.linalg.norm of vectors with ord={ord!r} is not supported")
    if ord == 2:
        return _two_norm(x, axes, keepdims)
    if ord == np.inf:
        return np.max(np.abs(x), axes, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axes, keepdims=keepdims)
    if ord == 0:  # the number of nonzero entries
        return _constant(np.sum(x.values != 0, axes, keepdims=keepdims).astype(x.dtype), x)
    if ord == 1:
        return np.sum(np.abs(x), axes, keepdims=keepdims)
    return np.sum(np.abs(x) ** ord, axes, keepdims=keepdims) ** (1.0 / ord)


def _matrix_norm(x, ord, axes, keepdims):
    if ord == "fro":
        return _two_norm(x, axes, keepdims)
    raise TypeError(f"cyad: numpy.linalg.norm of matrices with ord={ord!r} is not supported "
                    "(only None and 'fro')")


@implements(np.linalg.det, second_order=False)
def _det(a):
    """The derivative goes through inv(A): a singular A raises LinAlgError."""
    # d det(A) = sum_ij det(A) inv(A)_ji dA_ij, as one matmul over all lanes
    values = np.asarray(np.linalg.det(a.values))
    n = a.shape[-1]
    cofactors = values[..., None, None] * np.swapaxes(np.linalg.inv(a.values), -1, -2)
    lanes = np.matmul(cofactors.reshape(cofactors.shape[:-2] + (1, n * n)),
                      a.partials.reshape(a.partials.shape[:-3] + (n * n, a.width)))
    return _lanes_result(values, lanes, a)


@implements(np.linalg.inv, second_order=False)
def _inv(a):
    # d inv(A) = -Y dA Y with Y = inv(A)
    y = np.linalg.inv(a.values)
    return _result(y, -_partials_times_const(_const_times_partials(y, a.partials), y), a)


@implements(np.linalg.solve, second_order=False)
def _solve(a, b):
    # x = solve(A, b); dx = solve(A, db - dA x), every lane a right-hand side of one solve
    like, dtype = _common((a, b))
    (av, ap), (bv, bp) = _parts(a, dtype), _parts(b, dtype)
    vector = bv.ndim == 1
    if vector:  # a vector right-hand side as a single column
        bv, bp = bv[:, None], None if bp is None else bp[:, None]
    x = np.linalg.solve(av, bv)
    rhs = 0 if bp is None else bp
    if ap is not None:
        rhs = rhs - _partials_times_const(ap, x)
    k, width = rhs.shape[-2:]
    dx = np.linalg.solve(av, rhs.reshape(rhs.shape[:-2] + (k * width,)))
    return _lanes_result(x[..., 0] if vector else x, dx, like)

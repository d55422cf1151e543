"""Reductions that are not linear: products and extremes.

np.sum, np.cumsum and np.diff are linear (`structural`); np.mean, np.var and
np.std are compositions (`compositions`).

Ties of np.max and np.min follow the rule table's convention for np.maximum and
np.minimum (each of two equal operands gets half): the tangent of an extreme is
the mean of the tangents of the elements equal to it (JAX's convention too); an
``initial=`` equal to the extreme takes half, as np.maximum(extreme, initial) would.
``where=`` replaces the elements it leaves out by the reduction's identity (by
``initial`` for np.max and np.min, which need one): they carry no derivative.
"""
import math

import numpy as np

from cyad._primitives._table import (
    axes_of,
    is_engine_array,
    lanes_padded,
    ndim_of,
    primitive,
    shape_of,
)


def _others_product(x, axes):
    """For every element of x, the product of the other elements along `axes`, without
    division (exact with zeros): by prefix and suffix products on arrays, by the products
    of x with a one in every place on the arrays of an engine (O(n^2), differentiable)."""
    k = len(axes)
    moved = np.moveaxis(x, axes, range(x.ndim - k, x.ndim))
    merged = np.reshape(moved, moved.shape[:x.ndim - k] + (math.prod(moved.shape[x.ndim - k:]),))
    if type(merged) is np.ndarray:
        ones = np.ones_like(merged[..., :1])
        before = np.cumprod(np.concatenate([ones, merged[..., :-1]], axis=-1), axis=-1)
        after = np.cumprod(np.concatenate([ones, merged[..., :0:-1]], axis=-1), axis=-1)
        others = before * after[..., ::-1]
    else:
        n = merged.shape[-1]
        others = np.prod(np.where(np.eye(n, dtype=bool), 1.0, merged[..., None, :]), axis=-1)
    return np.moveaxis(np.reshape(others, moved.shape), range(x.ndim - k, x.ndim), axes)


def _reduced(a, where, fill):
    # the operand of a reduction with a where= mask: the others replaced by `fill`
    return a if where is True else np.where(where, a, fill)


@primitive(np.prod)
class _prod:
    """The product of the elements `where` selects, times `initial` (an operand of its own
    when given)."""

    def bind(a, axis=None, *, keepdims=False, initial=None, where=True):
        axes = axes_of(axis, ndim_of(a))
        a = _reduced(a, where, 1.0)
        return (a,) if initial is None else (a, initial), {"axes": axes, "keepdims": keepdims}

    def impl(x, *initial, axes, keepdims):
        product = np.prod(x, axes, keepdims=keepdims)
        return product * initial[0] if initial else product

    def jvp(primals, tangents, *, axes, keepdims):
        x, t = primals[0], tangents[0]
        product = np.prod(x, axes, keepdims=keepdims)
        lanes_axes = tuple(a + 1 for a in axes)   # the tangent's lanes lead
        tangent = None if t is None else np.sum(t * _others_product(x, axes), lanes_axes,
                                                keepdims=keepdims)
        if len(primals) == 1:
            return product, tangent
        initial, t_initial = primals[1], tangents[1]
        if tangent is not None:
            tangent = tangent * initial
        if t_initial is not None:
            by_initial = lanes_padded(t_initial, ndim_of(product)) * product
            tangent = by_initial if tangent is None else tangent + by_initial
        return product * initial, tangent

    def vjp(primals, ct, *, axes, keepdims):
        x = primals[0]
        spread = ct if keepdims else np.expand_dims(ct, axes)
        if len(primals) == 1:
            return (spread * _others_product(x, axes),)
        initial = primals[1]
        product = np.prod(x, axes, keepdims=keepdims)
        return (spread * initial * _others_product(x, axes),
                np.reshape(np.sum(ct * product), shape_of(initial)))


def _tie_weights(x, extreme, axes):
    # 1/count on the elements equal to the extreme (kept axes), 0 elsewhere: computed from
    # the comparison, so that an engine replaying it recomputes the ties
    mask = np.where(x == extreme, np.ones((), x.dtype), np.zeros((), x.dtype))
    return mask / np.sum(mask, axes, keepdims=True)


def _extreme(reduce, combine, beyond):
    """np.max or np.min (`reduce`); `initial` joins as by `combine` (np.maximum or
    np.minimum: at a tie with it the elements' share is 1/2, as the rule table's)."""

    def share_of(kept, initial, dtype):
        # the share of the elements' extreme in combine(extreme, initial)
        one, half, zero = (np.full((), v, dtype) for v in (1.0, 0.5, 0.0))
        return np.where(kept == initial, half, np.where(beyond(kept, initial), one, zero))

    class extreme:
        def bind(a, axis=None, *, keepdims=False, initial=None, where=True):
            if is_engine_array(initial):
                raise TypeError(f"cyad: numpy.{reduce.__name__} takes initial= as a constant")
            if where is not True and initial is None:
                raise ValueError(f"reduction operation '{combine.__name__}' does not have an "
                                 "identity, so to use a where mask one has to specify 'initial'")
            return (_reduced(a, where, initial),), {
                "axes": axes_of(axis, ndim_of(a)), "keepdims": keepdims, "initial": initial}

        def impl(x, *, axes, keepdims, initial):
            if initial is None:
                return reduce(x, axes, keepdims=keepdims)
            return reduce(x, axes, keepdims=keepdims, initial=initial)

        def jvp(primals, tangents, *, axes, keepdims, initial):
            (x,), (t,) = primals, tangents
            kept = reduce(x, axes, keepdims=True)
            weights = _tie_weights(x, kept, axes)
            if initial is not None:
                weights = weights * share_of(kept, initial, x.dtype)
                kept = combine(kept, initial)
            out = kept if keepdims else np.squeeze(kept, axes)
            lanes_axes = tuple(a + 1 for a in axes)
            return out, np.sum(t * weights, lanes_axes, keepdims=keepdims)

        def vjp(primals, ct, *, axes, keepdims, initial):
            (x,) = primals
            kept = reduce(x, axes, keepdims=True)
            weights = _tie_weights(x, kept, axes)
            if initial is not None:
                weights = weights * share_of(kept, initial, x.dtype)
            if not keepdims:
                ct = np.expand_dims(ct, axes)
            return (ct * weights,)

    extreme.__name__ = reduce.__name__
    return extreme


primitive(np.max, np.amax)(_extreme(np.max, np.maximum, np.greater))
primitive(np.min, np.amin)(_extreme(np.min, np.minimum, np.less))

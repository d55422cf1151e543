"""Reductions that are not linear: products and extremes.

np.sum, np.cumsum and np.diff are linear (`structural`); np.mean, np.var and
np.std are compositions (`compositions`).

Ties of np.max and np.min follow the rule table's convention for np.maximum and
np.minimum (each of two equal operands gets half): the tangent of an extreme is
the mean of the tangents of the elements equal to it (JAX's convention too).
"""
import numpy as np

from cyad._primitives._table import axes_of, ndim_of, primitive


def _others_product(x, axes):
    """For every element of x, the product of the other elements along `axes`, without
    division (exact with zeros): by prefix and suffix products on arrays, by the products
    of x with a one in every place on the arrays of an engine (O(n^2), differentiable)."""
    k = len(axes)
    moved = np.moveaxis(x, axes, range(x.ndim - k, x.ndim))
    merged = np.reshape(moved, moved.shape[:x.ndim - k] + (-1,))
    if type(merged) is np.ndarray:
        ones = np.ones_like(merged[..., :1])
        before = np.cumprod(np.concatenate([ones, merged[..., :-1]], axis=-1), axis=-1)
        after = np.cumprod(np.concatenate([ones, merged[..., :0:-1]], axis=-1), axis=-1)
        others = before * after[..., ::-1]
    else:
        n = merged.shape[-1]
        others = np.prod(np.where(np.eye(n, dtype=bool), 1.0, merged[..., None, :]), axis=-1)
    return np.moveaxis(np.reshape(others, moved.shape), range(x.ndim - k, x.ndim), axes)


@primitive(np.prod)
class _prod:
    def bind(a, axis=None, *, keepdims=False):
        return (a,), {"axes": axes_of(axis, ndim_of(a)), "keepdims": keepdims}

    def impl(x, *, axes, keepdims):
        return np.prod(x, axes, keepdims=keepdims)

    def jvp(primals, tangents, *, axes, keepdims):
        (x,), (t,) = primals, tangents
        out = np.prod(x, axes, keepdims=keepdims)
        lanes_axes = tuple(a + 1 for a in axes)   # the tangent's lanes lead
        return out, np.sum(t * _others_product(x, axes), lanes_axes, keepdims=keepdims)

    def vjp(primals, ct, *, axes, keepdims):
        (x,) = primals
        if not keepdims:
            ct = np.expand_dims(ct, axes)
        return (ct * _others_product(x, axes),)


def _tie_weights(x, extreme, axes):
    # 1/count on the elements equal to the extreme (kept axes), 0 elsewhere: computed from
    # the comparison, so that an engine replaying it recomputes the ties
    mask = np.where(x == extreme, np.ones((), x.dtype), np.zeros((), x.dtype))
    return mask / np.sum(mask, axes, keepdims=True)


def _extreme(reduce):
    class extreme:
        def bind(a, axis=None, *, keepdims=False):
            return (a,), {"axes": axes_of(axis, ndim_of(a)), "keepdims": keepdims}

        def impl(x, *, axes, keepdims):
            return reduce(x, axes, keepdims=keepdims)

        def jvp(primals, tangents, *, axes, keepdims):
            (x,), (t,) = primals, tangents
            kept = reduce(x, axes, keepdims=True)
            out = kept if keepdims else np.squeeze(kept, axes)
            lanes_axes = tuple(a + 1 for a in axes)
            return out, np.sum(t * _tie_weights(x, kept, axes), lanes_axes, keepdims=keepdims)

        def vjp(primals, ct, *, axes, keepdims):
            (x,) = primals
            kept = reduce(x, axes, keepdims=True)
            if not keepdims:
                ct = np.expand_dims(ct, axes)
            return (ct * _tie_weights(x, kept, axes),)

    extreme.__name__ = reduce.__name__
    return extreme


primitive(np.max, np.amax)(_extreme(np.max))
primitive(np.min, np.amin)(_extreme(np.min))

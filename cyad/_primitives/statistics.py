"""Statistics and cumulative reductions, written with other NumPy functions.

Every entry here is a composition: it calls table functions and ufuncs on its
arguments, so it holds no derivative code and works on every engine at every order.

- NaN-ignoring reductions (np.nansum, ..., np.nanmax) replace the NaNs by the
  reduction's identity through np.where on a mask read off the values: the derivative
  with respect to a NaN entry is 0 (as in JAX). A slice of NaNs alone gives NumPy's
  result (NaN for nanmax, nanmin, nanmean and kin) without its warning.
- Order statistics (np.quantile, np.percentile, np.median and their nan* kin) sort the
  values (np.sort: at ties each sorted element takes its own derivative, in the order
  of a stable sort, as in JAX) and interpolate between two sorted elements with
  weights computed from positions alone (constants).
- np.cumprod (and np.cumulative_prod, np.multiply.accumulate) is a scan by doubling:
  log2(n) products of the array and a shifted copy of itself, without division, so that
  zeros are exact.
- np.cov and np.corrcoef follow NumPy's algorithm; their weights (fweights, aweights)
  are constants. Results keep the operands' float dtype (NumPy's are float64 at least).
"""
import warnings

import numpy as np

from cyad._primitives._table import (
    axes_of,
    axis_of,
    composition,
    float_dtype_of,
    is_engine_array,
    ndim_of,
    shape_of,
)

# -- ranges and weighted means ------------------------------------------------------------------

@composition(np.ptp)
def _ptp(a, axis=None, *, keepdims=False):
    return np.max(a, axis, keepdims=keepdims) - np.min(a, axis, keepdims=keepdims)


def _weights_along(weights, shape, axes):
    """Weights of the shape of `shape`'s `axes` (in the order of `axes`), shaped to
    broadcast against an array of `shape` (NumPy's rule for np.average)."""
    if tuple(shape_of(weights)) != tuple(shape[i] for i in axes):
        raise ValueError("Shape of weights must be consistent with shape of a along "
                         "specified axis.")
    weights = np.transpose(weights, tuple(np.argsort(axes)))
    return np.reshape(weights, tuple(n if i in axes else 1 for i, n in enumerate(shape)))


@composition(np.average)
def _average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """The weighted mean; the weights may be differentiated too."""
    shape = shape_of(a)
    if weights is None:
        average = np.mean(a, axis, keepdims=keepdims)
        total = np.zeros(shape_of(average), float_dtype_of(a)) + np.size(a) / max(
            np.size(average), 1)
    else:
        if tuple(shape_of(weights)) != tuple(shape):
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            weights = _weights_along(weights, shape, axes_of(axis, len(shape)))
        total = np.sum(np.broadcast_to(weights, np.broadcast_shapes(shape, shape_of(weights))),
                       axis, keepdims=keepdims)
        if np.any(total == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        average = np.sum(a * weights, axis, keepdims=keepdims) / total
    if not returned:
        return average
    if shape_of(total) != shape_of(average):
        total = np.broadcast_to(total, shape_of(average)) * 1.0
    return average, total


# -- cumulative reductions ------------------------------------------------------------------------

def scan(ufunc, x, axis, identity):
    """ufunc.accumulate of an associative ufunc along `axis` by doubling: step k combines
    each element's window of 2**k elements with the disjoint window before it (padded
    with `identity`), log2(n) steps in all."""
    n = shape_of(x)[axis]
    shift = 1
    while shift < n:
        pad = list(shape_of(x))
        pad[axis] = shift
        before = x[(slice(None),) * axis + (slice(0, n - shift),)]
        x = ufunc(x, np.concatenate([np.full(pad, identity, float_dtype_of(x)), before], axis))
        shift *= 2
    return x


@composition(np.cumprod)
def _cumprod(a, axis=None):
    if axis is None:
        a, axis = np.reshape(a, -1), 0
    return scan(np.multiply, a, axis_of(axis, ndim_of(a)), 1.0)


def _cumulative(accumulate, identity, x, axis, include_initial):
    ndim = ndim_of(x)
    if axis is None:
        if ndim > 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument "
                             "is required.")
        axis = 0
    if ndim == 0:
        raise ValueError("axis 0 is out of bounds for array of dimension 0")
    axis = axis_of(axis, ndim)
    result = accumulate(x, axis)
    if not include_initial:
        return result
    edge = list(shape_of(x))
    edge[axis] = 1
    return np.concatenate([np.full(edge, identity, float_dtype_of(x)), result], axis)


def _cumulative_sum(x, /, *, axis=None, include_initial=False):
    return _cumulative(np.cumsum, 0.0, x, axis, include_initial)


def _cumulative_prod(x, /, *, axis=None, include_initial=False):
    return _cumulative(np.cumprod, 1.0, x, axis, include_initial)


if hasattr(np, "cumulative_sum"):   # NumPy 2.1 and later
    composition(np.cumulative_sum)(_cumulative_sum)
    composition(np.cumulative_prod)(_cumulative_prod)


# -- ignoring NaNs --------------------------------------------------------------------------------

def _without_nans(a, fill):
    return np.where(np.isnan(a), fill, a)


@composition(np.nansum)
def _nansum(a, axis=None, *, keepdims=False):
    return np.sum(_without_nans(a, 0.0), axis, keepdims=keepdims)


@composition(np.nanprod)
def _nanprod(a, axis=None, *, keepdims=False):
    return np.prod(_without_nans(a, 1.0), axis, keepdims=keepdims)


@composition(np.nancumsum)
def _nancumsum(a, axis=None):
    return np.cumsum(_without_nans(a, 0.0), axis)


@composition(np.nancumprod)
def _nancumprod(a, axis=None):
    return np.cumprod(_without_nans(a, 1.0), axis)


def _numbers(a, axis, keepdims):
    # the count of the entries that are not NaN (a constant)
    return np.count_nonzero(~np.isnan(a), axis, keepdims=keepdims)


@composition(np.nanmean)
def _nanmean(a, axis=None, *, keepdims=False):
    count = _numbers(a, axis, keepdims)
    with np.errstate(invalid="ignore", divide="ignore"):   # NaN for a slice of NaNs alone
        return np.nansum(a, axis, keepdims=keepdims) / count


@composition(np.nanvar)
def _nanvar(a, axis=None, *, ddof=0, keepdims=False):
    nan = np.isnan(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.where(nan, 0.0, a - np.nanmean(a, axis, keepdims=True))
        count = _numbers(a, axis, keepdims) - ddof
        return np.sum(d * d, axis, keepdims=keepdims) / np.maximum(count, 0)


@composition(np.nanstd)
def _nanstd(a, axis=None, *, ddof=0, keepdims=False):
    """sqrt(nanvar), with np.std's convention at a zero variance."""
    return np.sqrt(np.nanvar(a, axis, ddof=ddof, keepdims=keepdims))


def _nan_extreme(reduce, fill):
    def extreme(a, axis=None, *, keepdims=False):
        nan = np.isnan(a)
        result = reduce(np.where(nan, fill, a), axis, keepdims=keepdims)
        return np.where(np.all(nan, axis, keepdims=keepdims), np.nan, result)
    return extreme


composition(np.nanmax)(_nan_extreme(np.max, -np.inf))
composition(np.nanmin)(_nan_extreme(np.min, np.inf))


# -- order statistics ----------------------------------------------------------------------------

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _positions(q, count, method):
    """The sorted positions below and above each quantile of slices of `count` numbers
    and the weight of the one above (NumPy's definitions of the methods)."""
    last = np.maximum(count - 1, 0)
    virtual = q * last
    if method == "lower":
        virtual = np.floor(virtual)
    elif method == "higher":
        virtual = np.ceil(virtual)
    elif method == "nearest":
        virtual = np.around(virtual)
    below = np.floor(virtual).astype(np.intp)
    above = np.minimum(below + 1, last)
    weight = 0.5 if method == "midpoint" else virtual - below
    if method == "midpoint":   # the mean of the neighbours, one element where q hits it
        weight = np.where(virtual == below, 0.0, weight)
    return np.minimum(below, last), above, weight


def _quantile(a, q, axis, method, keepdims, ignore_nan, function):
    if is_engine_array(q):
        raise TypeError(f"cyad: numpy.{function} is differentiable in a, not in q")
    if method not in _METHODS:
        raise TypeError(f"cyad: numpy.{function} supports the methods {', '.join(_METHODS)}, "
                        f"not {method!r}")
    q = np.asarray(q, np.float64)
    if not np.all((q >= 0) & (q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    shape = shape_of(a)
    axes = axes_of(axis, len(shape))
    kept = [i for i in range(len(shape)) if i not in axes]
    # the reduced axes merged, last; the sorted values along it
    x = np.transpose(a, kept + list(axes))
    x = np.reshape(x, tuple(shape[i] for i in kept) + (-1,))
    order = np.argsort(x, axis=-1)   # NaNs last
    x = np.take_along_axis(x, order, -1)
    n = shape_of(x)[-1]
    count = np.asarray(np.count_nonzero(~np.isnan(x), -1) if ignore_nan
                       else np.full(shape_of(x)[:-1], n))
    count = count.reshape((1,) * q.ndim + count.shape)
    below, above, weight = _positions(q.reshape(q.shape + (1,) * (x.ndim - 1)), count, method)
    # the positions of every quantile of every slice, the quantiles last
    rest = np.broadcast_shapes(below.shape, count.shape)

    def taken(positions):
        positions = np.moveaxis(np.broadcast_to(positions, rest), tuple(range(q.ndim)),
                                tuple(range(-q.ndim, 0)))
        flat = np.reshape(positions, positions.shape[:x.ndim - 1] + (-1,))
        values = np.take_along_axis(x, flat, -1)
        values = np.reshape(values, positions.shape)
        return np.moveaxis(values, tuple(range(-q.ndim, 0)), tuple(range(q.ndim)))

    dtype = float_dtype_of(a)
    weight = np.asarray(np.broadcast_to(weight, rest), dtype)
    # NumPy's interpolation, to the last bit: from the nearer of the two
    low, high = taken(below), taken(above)
    step = high - low
    result = np.where(weight >= 0.5, high - step * (1.0 - weight), low + step * weight)
    # NaN: a slice of NaNs alone (nan*), any slice holding a NaN (the others, as NumPy's)
    undefined = count == 0 if ignore_nan else np.any(np.isnan(x), -1).reshape(count.shape)
    if np.any(undefined):
        result = np.where(np.broadcast_to(undefined, rest), np.nan, result)
    if keepdims:
        full = [1 if i in axes else n for i, n in enumerate(shape)]
        result = np.reshape(result, q.shape + tuple(full))
    return result


def _order_statistic(function, ignore_nan, scale=1.0):
    def statistic(a, q, axis=None, *, overwrite_input=False, method="linear", keepdims=False):
        q = q if is_engine_array(q) else np.true_divide(q, scale)
        return _quantile(a, q, axis, method, keepdims, ignore_nan, function)
    statistic.__name__ = function
    return statistic


composition(np.quantile)(_order_statistic("quantile", False))
composition(np.percentile)(_order_statistic("percentile", False, 100.0))
composition(np.nanquantile)(_order_statistic("nanquantile", True))
composition(np.nanpercentile)(_order_statistic("nanpercentile", True, 100.0))


@composition(np.median)
def _median(a, axis=None, *, overwrite_input=False, keepdims=False):
    """The middle element, or the mean of the two middle ones (np.quantile at 0.5)."""
    return _quantile(a, 0.5, axis, "linear", keepdims, False, "median")


@composition(np.nanmedian)
def _nanmedian(a, axis=None, *, overwrite_input=False, keepdims=False):
    return _quantile(a, 0.5, axis, "linear", keepdims, True, "nanmedian")


# -- covariance and correlation -----------------------------------------------------------------

def _constant_weights(weights, name, n, integral):
    if is_engine_array(weights):
        raise TypeError(f"cyad: numpy.cov takes {name} as constants, not differentiated arrays")
    weights = np.asarray(weights, dtype=np.float64)
    if integral and not np.all(weights == np.around(weights)):
        raise TypeError("fweights must be integer")
    if weights.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if weights.shape[0] != n:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if np.any(weights < 0):
        raise ValueError(f"{name} cannot be negative")
    return weights


@composition(np.cov)
def _cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None):
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    if ndim_of(m) > 2:
        raise ValueError("m has more than 2 dimensions")
    x = np.atleast_2d(m)
    if not rowvar and shape_of(x)[0] != 1:
        x = np.transpose(x)
    if y is not None:
        if ndim_of(y) > 2:
            raise ValueError("y has more than 2 dimensions")
        y = np.atleast_2d(y)
        if not rowvar and shape_of(y)[0] != 1:
            y = np.transpose(y)
        x = np.concatenate((x, y), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    n = shape_of(x)[1]
    w = None
    if fweights is not None:
        w = _constant_weights(fweights, "fweights", n, True)
    if aweights is not None:
        a = _constant_weights(aweights, "aweights", n, False)
        w = a if w is None else w * a
    if w is None:
        average, total = np.mean(x, axis=1), n
        fact = n - ddof
    else:
        w = w.astype(float_dtype_of(x))
        total = float(np.sum(w))
        average = np.sum(x * w, axis=1) / total
        if ddof == 0:
            fact = total
        elif aweights is None:
            fact = total - ddof
        else:
            fact = total - ddof * float(np.sum(w * a)) / total
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    x = x - np.reshape(average, (-1, 1))
    x_t = np.transpose(x if w is None else x * w)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.squeeze(np.matmul(x, x_t) / float(fact))


@composition(np.corrcoef)
def _corrcoef(x, y=None, rowvar=True):
    c = np.cov(x, y, rowvar)
    if ndim_of(c) == 0:   # one variable: c / c, as NumPy
        return c / c
    d = np.sqrt(np.diag(c))
    c = c / np.reshape(d, (-1, 1))
    c = c / np.reshape(d, (1, -1))
    return np.clip(c, -1.0, 1.0)

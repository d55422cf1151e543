"""Generated arguments for every NumPy function of the primitive table.

`ARGUMENTS` holds (function name, pattern, f, x): f calls the function on operands cut
from a flat x, for the property checks (tests/properties.py, tests/test_properties.py).
The patterns are generated per family of functions: every axis (None, first, last,
negative, several) with and without keepdims for the reductions, every ord of the norms,
every mode of take, pad, convolve and quantile, empty and one-element axes, broadcast
operands, and operands that are views: strided ("s", every other element of a longer
array), reversed ("r", negative strides on every axis) or transposed ("t"). Ties (sort,
max, median) and zeros (norms) come at their special points. `covered()` says which
table functions (and, by name, which entries of other modules' ufuncs) have arguments.
SciPy's functions outside NumPy's dispatch are called by the programs of
tests/scipy_programs.py (tests/test_scipy_functions.py holds each to one).
"""
import math
import warnings
import zlib

import numpy as np
import scipy.special
import scipy_programs

ARGUMENTS = []
_COVERED = set()


def covered():
    return frozenset(_COVERED)


def _name(function):
    module = getattr(function, "__module__", "numpy") or "numpy"
    return f"{module.replace('numpy._core', 'numpy')}.{function.__name__}"


def _size(shape, layout):
    return math.prod(shape) * (2 if layout == "s" else 1)


def _operand(x, shape, layout):
    if layout == "s":    # every other element of a longer array: strided
        if not shape:
            return x[::2][0]
        return x.reshape(shape[:-1] + (2 * shape[-1],))[..., ::2]
    if layout == "t":    # transposed: strides in reverse order
        return x.reshape(shape[::-1]).T
    a = x.reshape(shape)
    if layout == "r":    # negative strides on every axis
        return a[(slice(None, None, -1),) * len(shape)]
    return a


def _flat(result):
    """A function's result as one array: a tuple's float parts concatenated (counts, such
    as lstsq's rank, left out)."""
    if not isinstance(result, (tuple, list)):
        return result
    parts = [np.ravel(r) for r in result if not isinstance(r, (int, np.integer))]
    return np.concatenate(parts)


def case(function, pattern, shapes, call, layouts=None, scale=1.0, shift=0.0, x=None):
    """Arguments of `function` (or of a name: an entry of another module's ufunc):
    `call(*operands)` on operands of `shapes` (and `layouts`) cut from x (drawn: shift +
    scale * normal, unless given)."""
    layouts = layouts or "c" * len(shapes)
    sizes = [_size(s, layout) for s, layout in zip(shapes, layouts)]
    if x is None:   # (one number at least: an empty x has nothing to differentiate)
        rng = np.random.default_rng(zlib.crc32(f"{_name(function)} {pattern}".encode()))
        x = shift + scale * rng.standard_normal(max(sum(sizes), 1))
    starts = np.cumsum([0] + sizes)

    def f(x):
        operands = [_operand(x[s:s + n], shape, layout)
                    for s, n, shape, layout in zip(starts, sizes, shapes, layouts)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return _flat(call(*operands))

    name = function if isinstance(function, str) else _name(function)
    ARGUMENTS.append((name, pattern, f, np.asarray(x, np.float64)))
    _COVERED.add(function)


def cases(functions, pattern, shapes, call, **options):
    for function in functions:
        case(function, pattern, shapes, lambda *a, function=function: call(function, *a),
             **options)


# constants of the patterns: a well-conditioned matrix and a positive definite one
EYE3 = 3.0 * np.eye(3)
SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])
NAN_AT = (np.arange(24) % 5 == 1).reshape(2, 3, 4)


def _with_nans(a):
    return np.where(NAN_AT.reshape(-1)[:a.size].reshape(a.shape), np.nan, a)


# -- reductions: every axis, with and without keepdims ----------------------------------------

AXES = [None, 0, -1, 1, (0, 2), (-1, 0)]
REDUCTIONS = [np.sum, np.mean, np.var, np.std, np.prod, np.max, np.amax, np.min, np.amin,
              np.ptp, np.median, np.nansum, np.nanprod, np.nanmean, np.nanvar, np.nanstd,
              np.nanmax, np.nanmin, np.nanmedian]
NAN_REDUCTIONS = {np.nansum, np.nanprod, np.nanmean, np.nanvar, np.nanstd, np.nanmax,
                  np.nanmin, np.nanmedian}
NO_KEEPDIMS = {np.ptp}

for reduction in REDUCTIONS:
    nans = reduction in NAN_REDUCTIONS
    for axis in AXES:
        for keepdims in (False, True):
            if keepdims and reduction in NO_KEEPDIMS:
                continue
            case(reduction, f"axis={axis}-keepdims={keepdims}", [(2, 3, 4)],
                 lambda a, r=reduction, axis=axis, k=keepdims, nans=nans:
                 r(_with_nans(a) if nans else a, axis=axis, keepdims=k))
    case(reduction, "one-element-axis", [(1, 4)], lambda a, r=reduction: r(a, axis=0))
    case(reduction, "strided", [(3, 4)], lambda a, r=reduction: r(a, axis=1), layouts="s")
    case(reduction, "reversed", [(3, 4)], lambda a, r=reduction: r(a, axis=0), layouts="r")
    case(reduction, "transposed", [(3, 4)], lambda a, r=reduction: r(a, axis=-1), layouts="t")
    case(reduction, "ties", [(6,)], lambda a, r=reduction: r(a),
         x=np.array([1.0, -2.0, 1.0, 0.5, -2.0, 1.0]))
for reduction in (np.sum, np.prod, np.nansum, np.nanprod):
    case(reduction, "empty-axis", [(0, 3)], lambda a, r=reduction: r(a, axis=0))
for reduction in (np.var, np.std, np.nanvar, np.nanstd):
    case(reduction, "ddof=1", [(3, 4)], lambda a, r=reduction: r(a, axis=1, ddof=1))
    case(reduction, "equal-numbers", [(4,)], lambda a, r=reduction: r(a),
         x=np.full(4, 0.75))
for reduction in (np.sum, np.prod, np.max, np.min, np.mean):
    case(reduction, "where", [(3, 4)],
         lambda a, r=reduction: r(a, axis=1, where=np.array([True, False, True, True]),
                                  **({} if r is np.mean else
                                     {"initial": 0.5 if r is not np.min else -0.5})))
case(np.average, "weights", [(3, 4), (4,)],
     lambda a, w: np.average(a, axis=1, weights=w * w + 1.0))
case(np.average, "returned", [(3, 4), (3,)],
     lambda a, w: np.average(a, axis=0, weights=w * w + 0.5, returned=True))
case(np.average, "keepdims", [(2, 3, 4)], lambda a: np.average(a, axis=(0, 2), keepdims=True))
case(np.average, "all", [(3, 4)], lambda a: np.average(a))

# -- cumulative and differences ---------------------------------------------------------------

for cumulative in (np.cumsum, np.cumprod, np.nancumsum, np.nancumprod):
    nans = cumulative in (np.nancumsum, np.nancumprod)
    for axis in (None, 0, -1):
        case(cumulative, f"axis={axis}", [(3, 4)],
             lambda a, c=cumulative, axis=axis, nans=nans: c(_with_nans(a) if nans else a,
                                                             axis=axis))
    case(cumulative, "reversed", [(3, 4)], lambda a, c=cumulative: c(a, axis=1), layouts="r")
for cumulative in (np.cumulative_sum, np.cumulative_prod):
    for axis in (0, -1):
        for initial in (False, True):
            case(cumulative, f"axis={axis}-include_initial={initial}", [(3, 4)],
                 lambda a, c=cumulative, axis=axis, i=initial: c(a, axis=axis,
                                                                  include_initial=i))
case(np.cumprod, "with-a-zero", [(5,)], lambda a: np.cumprod(a),
     x=np.array([1.5, 0.0, -2.0, 0.0, 0.5]))
for n in (1, 2):
    for axis in (0, -1):
        case(np.diff, f"n={n}-axis={axis}", [(3, 4)], lambda a, n=n, axis=axis:
             np.diff(a, n=n, axis=axis))
case(np.diff, "prepend-append", [(3, 4), (3, 1)],
     lambda a, b: np.diff(a, axis=1, prepend=b, append=0.5))
case(np.diff, "strided", [(3, 4)], lambda a: np.diff(a, axis=0), layouts="s")
case(np.gradient, "spacing", [(3, 4)], lambda a: np.gradient(a, 0.5, 2.0))
case(np.gradient, "coordinates-axis", [(3, 4), (4,)],
     lambda a, c: np.gradient(a, np.cumsum(c * c + 0.5), axis=1))
case(np.gradient, "edge-order-2", [(3, 5)], lambda a: np.gradient(a, axis=1, edge_order=2))
case(np.trapezoid, "dx-axis", [(3, 4)], lambda a: np.trapezoid(a, dx=0.5, axis=0))
case(np.trapezoid, "x", [(3, 4), (4,)], lambda a, c: np.trapezoid(a, x=np.cumsum(c * c)))
case(np.polyval, "array", [(4,), (5,)], lambda p, x: np.polyval(p, x))
case(np.polyval, "scalar", [(3,), ()], lambda p, x: np.polyval(p, x))

# -- selection, ordering, masks -----------------------------------------------------------------

for axis in (0, -1, None):
    case(np.sort, f"axis={axis}", [(3, 4)], lambda a, axis=axis: np.sort(a, axis=axis))
case(np.sort, "ties", [(6,)], lambda a: np.sort(a) * np.arange(6.0),
     x=np.array([1.0, -2.0, 1.0, 0.5, -2.0, 1.0]))
case(np.sort, "reversed", [(3, 4)], lambda a: np.sort(a), layouts="r")
for kth in (0, 2, (1, 3)):
    case(np.partition, f"kth={kth}", [(3, 5)],
         lambda a, kth=kth: np.take(np.partition(a, kth, axis=1), np.ravel(kth), axis=1))
case(np.clip, "bounds", [(8,)], lambda a: np.clip(a, -0.5, 0.5))
case(np.clip, "array-bounds", [(3, 4), (4,), (3, 1)],
     lambda a, lo, hi: np.clip(a, lo - 1.0, hi + 1.0))
case(np.clip, "one-bound", [(6,)], lambda a: np.clip(a, None, 0.2))
case(np.clip, "at-its-bounds", [(4,)], lambda a: np.clip(a, 0.0, 1.0),
     x=np.array([0.0, 1.0, 0.5, 2.0]))
case(np.where, "traced-condition", [(3, 4), (4,)], lambda a, b: np.where(a > b, a, b * b))
case(np.where, "fixed-condition", [(3, 4), ()],
     lambda a, b: np.where(np.arange(12).reshape(3, 4) % 3 == 0, a, b))
case(np.select, "conditions", [(6,)],
     lambda a: np.select([a < -0.5, a < 0.5], [a * a, np.sin(a)], a ** 3))
case(np.piecewise, "functions", [(6,)],
     lambda a: np.piecewise(a, [a < 0.0, a >= 0.0], [lambda t: t * t, lambda t: t ** 3]))
case(np.piecewise, "constants", [(6,)],
     lambda a: np.piecewise(a, [a < -0.3, a > 0.6], [lambda t: -t, 0.25, lambda t: t * t]))
case(np.interp, "knots", [(5,), (6,)],
     lambda x, fp: np.interp(x, np.linspace(-2.0, 2.0, 6), fp))
case(np.interp, "left-right", [(5,), (6,), (2,)],
     lambda x, fp, e: np.interp(3.0 * x, np.linspace(-2.0, 2.0, 6), fp, left=e[0],
                                right=e[1]))
case(np.interp, "traced-knots", [(4,), (6,)],
     lambda x, k: np.interp(x, np.cumsum(k * k + 0.1) - 1.0, k))
case(np.sinc, "values", [(6,)], lambda a: np.sinc(a))
case(np.sinc, "at-zero", [(3,)], lambda a: np.sinc(a), x=np.array([0.0, 1.0, -0.5]))
case(np.nan_to_num, "defaults", [(6,)],
     lambda a: np.nan_to_num(np.where(a > 0.5, np.inf, np.where(a < -0.5, np.nan, a))))
case(np.nan_to_num, "given", [(6,), ()],
     lambda a, b: np.nan_to_num(np.where(a > 0.5, np.inf, np.where(a < -0.5, -np.inf, a)),
                                nan=1.0, posinf=2.0, neginf=b))

# -- quantiles -------------------------------------------------------------------------------------

for quantile in (np.quantile, np.percentile, np.nanquantile, np.nanpercentile):
    scale = 100.0 if quantile in (np.percentile, np.nanpercentile) else 1.0
    nans = quantile in (np.nanquantile, np.nanpercentile)
    for method in ("linear", "lower", "higher", "midpoint", "nearest"):
        case(quantile, f"method={method}", [(3, 4)],
             lambda a, q=quantile, s=scale, m=method, nans=nans:
             q(_with_nans(a) if nans else a, np.array([0.2, 0.5]) * s, axis=1, method=m))
    case(quantile, "scalar-keepdims", [(2, 3, 4)],
         lambda a, q=quantile, s=scale: q(a, 0.3 * s, axis=(0, 2), keepdims=True))
    case(quantile, "all", [(3, 4)], lambda a, q=quantile, s=scale: q(a, 0.9 * s))
for median in (np.median, np.nanmedian):
    case(median, "even-count", [(4,)], lambda a, m=median: m(a))

# -- statistics of samples ------------------------------------------------------------------------

case(np.cov, "rows", [(3, 5)], lambda a: np.cov(a))
case(np.cov, "columns-two", [(5, 2), (5, 1)], lambda a, b: np.cov(a, b, rowvar=False, ddof=0))
case(np.cov, "weights", [(3, 4)], lambda a: np.cov(a, fweights=np.array([1, 2, 1, 3]),
                                                   aweights=np.array([0.5, 1.0, 2.0, 1.5])))
case(np.cov, "bias", [(6,)], lambda a: np.cov(a, bias=True))
case(np.corrcoef, "rows", [(3, 5)], lambda a: np.corrcoef(a))
case(np.corrcoef, "two", [(5,), (5,)], lambda a, b: np.corrcoef(a, b))
case(np.corrcoef, "columns", [(5, 3)], lambda a: np.corrcoef(a, rowvar=False))
for mode in ("full", "same", "valid"):
    for function in (np.convolve, np.correlate):
        case(function, f"mode={mode}", [(6,), (3,)], lambda a, v, f=function, m=mode:
             f(a, v, mode=m))
        case(function, f"mode={mode}-shorter-first", [(3,), (5,)],
             lambda a, v, f=function, m=mode: f(a, v, mode=m))

# -- shapes, joins and splits ----------------------------------------------------------------------

for order in ("C", "F"):
    case(np.reshape, f"order={order}", [(3, 4)], lambda a, o=order: np.reshape(a, (2, -1),
                                                                               order=o))
    case(np.ravel, f"order={order}", [(3, 4)], lambda a, o=order: np.ravel(a, order=o))
case(np.reshape, "strided", [(3, 4)], lambda a: np.reshape(a, (4, 3)), layouts="s")
case(np.reshape, "transposed", [(3, 4)], lambda a: np.reshape(a, (12,)), layouts="t")
case(np.ravel, "reversed", [(3, 4)], lambda a: np.ravel(a), layouts="r")
case(np.transpose, "axes", [(2, 3, 4)], lambda a: np.transpose(a, (2, 0, 1)))
case(np.transpose, "reverse", [(2, 3)], lambda a: np.transpose(a), layouts="s")
case(np.swapaxes, "axes", [(2, 3, 4)], lambda a: np.swapaxes(a, 0, -1))
case(np.moveaxis, "axes", [(2, 3, 4)], lambda a: np.moveaxis(a, [0, 1], [-1, 0]))
case(np.matrix_transpose, "stack", [(2, 3, 4)], lambda a: np.matrix_transpose(a))
case(np.linalg.matrix_transpose, "matrix", [(3, 4)], lambda a: np.linalg.matrix_transpose(a))
case(np.squeeze, "axis", [(3, 1, 4, 1)], lambda a: np.squeeze(a, axis=(1, 3)))
case(np.squeeze, "all", [(1, 3, 1)], lambda a: np.squeeze(a))
case(np.expand_dims, "axes", [(3, 4)], lambda a: np.expand_dims(a, (0, -1)))
case(np.atleast_1d, "scalar", [()], lambda a: np.atleast_1d(a))
case(np.atleast_2d, "vector", [(3,)], lambda a: np.atleast_2d(a))
for axis in (None, 0, (0, 2), -1):
    case(np.flip, f"axis={axis}", [(2, 3, 4)], lambda a, axis=axis: np.flip(a, axis))
case(np.fliplr, "matrix", [(3, 4)], lambda a: np.fliplr(a))
case(np.flipud, "matrix", [(3, 4)], lambda a: np.flipud(a), layouts="r")
for k in (1, 2, -1):
    case(np.rot90, f"k={k}", [(2, 3, 4)], lambda a, k=k: np.rot90(a, k, axes=(1, 2)))
case(np.broadcast_to, "leading", [(3, 1)], lambda a: np.broadcast_to(a, (2, 3, 4)))
case(np.broadcast_to, "empty", [(1, 3)], lambda a: np.broadcast_to(a, (0, 3)))
case(np.broadcast_arrays, "three", [(3, 1), (4,), ()],
     lambda a, b, c: np.broadcast_arrays(a, b * b, c))
case(np.copy, "strided", [(3, 4)], lambda a: np.copy(a), layouts="s")
for mode in ("raise", "wrap", "clip"):
    case(np.take, f"mode={mode}", [(3, 4)], lambda a, m=mode:
         np.take(a, np.array([[3, 0], [3, 1]]) if m == "raise" else np.array([5, -1, 13]),
                 axis=1 if m == "raise" else None, mode=m))
case(np.take, "repeated", [(5,)], lambda a: np.take(a, [1, 1, 4, 0, 1]))
for axis in (0, 1, None):
    case(np.take_along_axis, f"axis={axis}", [(3, 4)], lambda a, axis=axis:
         np.take_along_axis(a, np.array([[2, 0, 1, 1], [1, 1, 0, 2]]) if axis == 0 else
                            np.array([[3, 0], [1, 1], [2, 2]]) if axis == 1 else
                            np.array([11, 0, 5, 5]), axis=axis))
for k in (0, 1, -1):
    case(np.diag, f"vector-k={k}", [(3,)], lambda a, k=k: np.diag(a, k))
    case(np.diag, f"matrix-k={k}", [(3, 4)], lambda a, k=k: np.diag(a, k))
    case(np.diagflat, f"k={k}", [(2, 2)], lambda a, k=k: np.diagflat(a, k))
    case(np.triu, f"k={k}", [(3, 4)], lambda a, k=k: np.triu(a, k))
    case(np.tril, f"k={k}", [(2, 3, 3)], lambda a, k=k: np.tril(a, k))
for offset, axes in ((0, (0, 1)), (1, (1, 2)), (-1, (2, 0))):
    case(np.diagonal, f"offset={offset}-axes={axes}", [(3, 3, 4)],
         lambda a, o=offset, axes=axes: np.diagonal(a, o, *axes))
    case(np.trace, f"offset={offset}-axes={axes}", [(3, 3, 4)],
         lambda a, o=offset, axes=axes: np.trace(a, o, *axes))
case(np.linalg.trace, "offset", [(2, 3, 3)], lambda a: np.linalg.trace(a, offset=1))
for axis in (0, 1, None):
    case(np.concatenate, f"axis={axis}", [(2, 3), (2, 3)],
         lambda a, b, axis=axis: np.concatenate([a, b * b], axis=axis))
case(np.concatenate, "empty-part", [(0, 3), (2, 3)],
     lambda a, b: np.concatenate([a, b], axis=0))
for axis in (0, -1, 1):
    case(np.stack, f"axis={axis}", [(2, 3), (2, 3)],
         lambda a, b, axis=axis: np.stack([a, b * b], axis=axis))
case(np.hstack, "vectors", [(2,), (3,)], lambda a, b: np.hstack([a, b * b]))
case(np.vstack, "rows", [(3,), (2, 3)], lambda a, b: np.vstack([a, b]))
case(np.column_stack, "mixed", [(3,), (3, 2)], lambda a, b: np.column_stack([a, b]))
case(np.dstack, "matrices", [(2, 3), (2, 3)], lambda a, b: np.dstack([a, b * b]))
case(np.block, "nested", [(2, 2), (2, 3), (1, 5)], lambda a, b, c: np.block([[a, b], [c]]))
for sections in (3, [1, 4]):
    case(np.split, f"sections={sections}", [(6, 2)],
         lambda a, s=sections: np.split(a, s, axis=0))
case(np.array_split, "uneven", [(7,)], lambda a: np.array_split(a, 3))
case(np.hsplit, "columns", [(2, 6)], lambda a: np.hsplit(a, 2))
case(np.vsplit, "rows", [(4, 3)], lambda a: np.vsplit(a, [1]))
case(np.dsplit, "depth", [(2, 2, 3)], lambda a: np.dsplit(a, 3))
# (the modes that place elements: linear_ramp, maximum, mean, ... are refused)
for mode in ("constant", "edge", "reflect", "symmetric", "wrap"):
    case(np.pad, f"mode={mode}", [(3, 4)], lambda a, m=mode: np.pad(a, ((1, 2), (0, 1)),
                                                                    mode=m))
for shift, axis in ((1, None), (-2, 1), ((1, 2), (0, 1))):
    case(np.roll, f"shift={shift}-axis={axis}", [(3, 4)],
         lambda a, s=shift, axis=axis: np.roll(a, s, axis))
case(np.tile, "reps", [(2, 3)], lambda a: np.tile(a, (2, 1, 2)))
for repeats, axis in ((2, None), ([1, 0, 2], 0), (3, -1)):
    case(np.repeat, f"repeats={repeats}-axis={axis}", [(3, 2)],
         lambda a, r=repeats, axis=axis: np.repeat(a, r, axis))
case(np.delete, "flat", [(6,)], lambda a: np.delete(a, [1, 3]))
case(np.delete, "axis", [(3, 4)], lambda a: np.delete(a, 0, axis=1))
case(np.insert, "values", [(6,), (2,)], lambda a, v: np.insert(a, [1, 5], v))
case(np.insert, "axis", [(3, 4), (4,)], lambda a, v: np.insert(a, 2, v, axis=0))
case(np.append, "flat", [(3,), (2, 2)], lambda a, b: np.append(a, b))
case(np.append, "axis", [(2, 3), (1, 3)], lambda a, b: np.append(a, b, axis=0))
for indexing in ("xy", "ij"):
    for sparse in (False, True):
        case(np.meshgrid, f"indexing={indexing}-sparse={sparse}", [(3,), (2,)],
             lambda a, b, i=indexing, s=sparse: np.meshgrid(a, b * b, indexing=i, sparse=s))

# -- products -------------------------------------------------------------------------------------

case(np.matmul, "batch-broadcast", [(2, 1, 3, 4), (3, 4, 2)], lambda a, b: np.matmul(a, b))
case(np.matmul, "vector-matrix", [(3,), (2, 3, 4)], lambda a, b: np.matmul(a, b))
case(np.matmul, "matrix-vector", [(3, 4), (4,)], lambda a, b: a @ b, layouts="tc")
case(np.matmul, "strided", [(3, 4), (4, 2)], lambda a, b: a @ b, layouts="sr")
case(np.matmul, "same-operand", [(3, 3)], lambda a: a @ a)
case(np.matmul, "empty", [(3, 0), (0, 2)], lambda a, b: a @ b)
case(np.linalg.matmul, "matrices", [(3, 4), (4, 2)], lambda a, b: np.linalg.matmul(a, b))
for axes in (0, 1, 2, ([1, 0], [0, 1])):
    case(np.tensordot, f"axes={axes}", [(3, 4), (4, 2)] if axes == 1 else
         [(3, 4, 2), (4, 3, 2)] if axes == ([1, 0], [0, 1]) else [(3, 4, 2), (4, 2, 3)],
         lambda a, b, axes=axes: np.tensordot(a, b, axes))
case(np.linalg.tensordot, "axes", [(3, 4), (4, 2)],
     lambda a, b: np.linalg.tensordot(a, b, axes=1))
case(np.dot, "matrices", [(3, 4), (4, 2)], lambda a, b: np.dot(a, b))
case(np.dot, "scalar", [(), (3,)], lambda a, b: np.dot(a, b))
case(np.dot, "nd", [(2, 3, 4), (4, 2)], lambda a, b: np.dot(a, b))
case(np.inner, "matrices", [(2, 3), (4, 3)], lambda a, b: np.inner(a, b))
case(np.outer, "vectors", [(3,), (2, 2)], lambda a, b: np.outer(a, b))
case(np.linalg.outer, "vectors", [(3,), (2,)], lambda a, b: np.linalg.outer(a, b))
case(np.kron, "matrices", [(2, 2), (2, 3)], lambda a, b: np.kron(a, b))
case(np.vdot, "matrices", [(2, 3), (3, 2)], lambda a, b: np.vdot(a, b))
for axis in (-1, 0):
    case(np.vecdot, f"axis={axis}", [(3, 4), (3, 4)], lambda a, b, axis=axis:
         np.vecdot(a, b, axis=axis))
case(np.linalg.vecdot, "broadcast", [(2, 1, 3), (4, 3)], lambda a, b: np.linalg.vecdot(a, b))
case(np.matvec, "stack", [(2, 3, 4), (4,)], lambda a, b: np.matvec(a, b))
case(np.vecmat, "stack", [(3,), (2, 3, 4)], lambda a, b: np.vecmat(a, b))
case(np.linalg.multi_dot, "chain", [(2, 3), (3, 4), (4,)],
     lambda a, b, c: np.linalg.multi_dot([a, b, c]))
for n in (0, 1, 3, -2):
    case(np.linalg.matrix_power, f"n={n}", [(3, 3)],
         lambda a, n=n: np.linalg.matrix_power(a + EYE3, n), scale=0.3)
for axes in ({}, {"axisa": 0}, {"axisb": 0, "axisc": 0}, {"axis": 0}):
    case(np.cross, f"{axes or 'last'}", [(4, 3), (4, 3)],
         lambda a, b, axes=axes: np.cross(a.T if "axisa" in axes or "axis" in axes else a,
                                          b.T if "axisb" in axes or "axis" in axes else b,
                                          **axes))
case(np.cross, "two-vectors", [(4, 2), (4, 3)], lambda a, b: np.cross(a, b))
case(np.linalg.cross, "vectors", [(2, 3), (2, 3)], lambda a, b: np.linalg.cross(a, b))
for subscripts, shapes in (("ij,jk->ik", [(3, 4), (4, 2)]), ("ij,kj", [(3, 4), (2, 4)]),
                           ("...ij,...jk->...ik", [(2, 3, 4), (4, 2)]),
                           ("j...k,lj...->lk...", [(2, 2), (2, 2, 2)]),
                           ("jk...,lj...->lk...", [(3, 2), (2, 3, 4)]),
                           ("ii->i", [(3, 3)]), ("iij,j->i", [(3, 3, 4), (4,)]),
                           ("i...i,...->i...", [(3, 2, 3), (2,)]), ("ij,j->", [(3, 4), (4,)]),
                           ("...i,...i->...", [(3, 1, 4), (5, 4)]),
                           ("i,j,j", [(3,), (2,), (2,)])):
    case(np.einsum, subscripts, shapes, lambda *ops, s=subscripts: np.einsum(s, *ops))
case(np.einsum, "sublists", [(3, 4), (4, 2)],
     lambda a, b: np.einsum(a, [0, 1], b, [1, 30], [30, 0]))
case(np.einsum, "strided", [(3, 4), (4, 2)], lambda a, b: np.einsum("ij,jk", a, b),
     layouts="rs")

# -- linear algebra --------------------------------------------------------------------------------

case(np.linalg.det, "stack", [(2, 3, 3)], lambda a: np.linalg.det(a + EYE3), scale=0.3)
case(np.linalg.det, "transposed", [(3, 3)], lambda a: np.linalg.det(a + EYE3), layouts="t",
     scale=0.3)
case(np.linalg.slogdet, "matrix", [(3, 3)], lambda a: np.linalg.slogdet(a + EYE3)[1],
     scale=0.3)
case(np.linalg.inv, "stack", [(2, 3, 3)], lambda a: np.linalg.inv(a + EYE3), scale=0.3)
case(np.linalg.solve, "vector", [(3, 3), (3,)], lambda a, b: np.linalg.solve(a + EYE3, b),
     scale=0.3)
case(np.linalg.solve, "batch-matrix", [(2, 3, 3), (3, 2)],
     lambda a, b: np.linalg.solve(a + EYE3, b), scale=0.3)
case(np.linalg.cholesky, "matrix", [(3, 3)],
     lambda a: np.linalg.cholesky(SPD + 0.2 * (a + a.T)), scale=0.3)
case(np.linalg.cholesky, "upper", [(3, 3)],
     lambda a: np.linalg.cholesky(SPD + 0.2 * (a + a.T), upper=True), scale=0.3)
for uplo in ("L", "U"):
    case(np.linalg.eigh, f"UPLO={uplo}", [(3, 3)],
         lambda a, u=uplo: np.linalg.eigh(SPD + 0.2 * a, UPLO=u), scale=0.3)
case(np.linalg.eigvalsh, "stack", [(2, 3, 3)], lambda a: np.linalg.eigvalsh(SPD + 0.2 * a),
     scale=0.3)
# (a tall matrix's complete Q, or its full U, is not unique: refused)
for mode in ("reduced", "r"):
    case(np.linalg.qr, f"tall-{mode}", [(4, 3)], lambda a, m=mode: np.linalg.qr(a, mode=m))
case(np.linalg.qr, "square-complete", [(3, 3)], lambda a: np.linalg.qr(a, mode="complete"))
case(np.linalg.qr, "wide", [(3, 5)], lambda a: np.linalg.qr(a + np.eye(3, 5)))
case(np.linalg.svd, "tall", [(4, 3)], lambda a: np.linalg.svd(a, full_matrices=False))
case(np.linalg.svd, "square-full", [(3, 3)], lambda a: np.linalg.svd(a))
case(np.linalg.svd, "values", [(2, 3, 5)], lambda a: np.linalg.svd(a, compute_uv=False))
case(np.linalg.svdvals, "wide", [(3, 5)], lambda a: np.linalg.svdvals(a))
case(np.linalg.eig, "matrix", [(3, 3)],
     lambda a: np.linalg.eig(np.diag([1.0, 2.5, 4.0]) + 0.2 * a))
case(np.linalg.eigvals, "stack", [(2, 3, 3)],
     lambda a: np.linalg.eigvals(np.diag([1.0, 2.5, 4.0]) + 0.2 * a))
case(np.linalg.pinv, "tall", [(4, 3)], lambda a: np.linalg.pinv(a))
case(np.linalg.pinv, "hermitian", [(3, 3)],
     lambda a: np.linalg.pinv(SPD + 0.2 * (a + a.T), hermitian=True), scale=0.3)
case(np.linalg.lstsq, "tall", [(5, 3), (5, 2)], lambda a, b: np.linalg.lstsq(a, b))
case(np.linalg.lstsq, "wide-vector", [(3, 5), (3,)], lambda a, b: np.linalg.lstsq(a, b)[0])
case(np.linalg.tensorinv, "ind=2", [(2, 2, 4)],
     lambda a: np.linalg.tensorinv((a.reshape(4, 4) + 4.0 * np.eye(4)).reshape(2, 2, 4), 2),
     scale=0.3)
case(np.linalg.tensorsolve, "axes", [(2, 2, 4), (2, 2)],
     lambda a, b: np.linalg.tensorsolve(
         np.moveaxis((a.reshape(4, 4) + 4.0 * np.eye(4)).reshape(2, 2, 4), 2, 0), b,
         axes=(0,)), scale=0.3)
for order in (None, 1, -1, 2, -2, np.inf, -np.inf, 0, 3, 0.5):
    case(np.linalg.norm, f"vector-ord={order}", [(5,)],
         lambda a, o=order: np.linalg.norm(a, o))
for order in (None, 1, -1, 2, -2, np.inf, -np.inf, "fro", "nuc"):
    case(np.linalg.norm, f"matrix-ord={order}", [(3, 4)],
         lambda a, o=order: np.linalg.norm(a, o))
case(np.linalg.norm, "axis-keepdims", [(2, 3, 4)],
     lambda a: np.linalg.norm(a, 1, axis=(2, 1), keepdims=True))
case(np.linalg.norm, "at-zero", [(3,)], lambda a: np.linalg.norm(a), x=np.zeros(3))
for order in (2, 1, np.inf, -np.inf, 3, 0):
    case(np.linalg.vector_norm, f"ord={order}", [(2, 3, 4)],
         lambda a, o=order: np.linalg.vector_norm(a, axis=(0, 2), ord=o, keepdims=True))
case(np.linalg.vector_norm, "at-zero", [(3,)], lambda a: np.linalg.vector_norm(a),
     x=np.zeros(3))
for order in ("fro", "nuc", 1, -1, 2, -2, np.inf):
    case(np.linalg.matrix_norm, f"ord={order}", [(2, 3, 4)],
         lambda a, o=order: np.linalg.matrix_norm(a, ord=o))
case(np.linalg.matrix_norm, "keepdims", [(3, 4)],
     lambda a: np.linalg.matrix_norm(a, keepdims=True))


# -- other modules' ufuncs of the table, and SciPy's functions outside NumPy's dispatch -----------

for name, function in (("scipy.special.betainc", scipy.special.betainc),
                       ("scipy.special.betaincc", scipy.special.betaincc)):
    # differentiable in x only: a and b constants
    case(name, "x", [(5,)], lambda x, f=function: f(1.5, 2.5, x), x=np.linspace(0.1, 0.9, 5))
    case(name, "broadcast", [(2, 1)], lambda x, f=function: f(np.array([0.5, 2.0, 3.0]), 1.5, x),
         x=np.array([0.2, 0.7]))
# differentiable in z only: a, b and c constants
case("scipy.special.hyp2f1", "z", [(5,)], lambda z: scipy.special.hyp2f1(0.5, 1.5, 2.5, z),
     x=np.linspace(-0.8, 0.8, 5))
case("scipy.special.hyp2f1", "broadcast", [(2, 1)],
     lambda z: scipy.special.hyp2f1(np.array([0.5, -1.5, 3.0]), 1.5, 2.5, z),
     x=np.array([-0.3, 0.6]))
# differentiable in x only: a and b constants
case("scipy.special.log_wright_bessel", "x", [(5,)],
     lambda x: scipy.special.log_wright_bessel(0.5, 1.5, x), x=np.linspace(0.2, 3.0, 5))
for name, function in (("scipy.special.airy", scipy.special.airy),
                       ("scipy.special.airye", scipy.special.airye)):
    # four results (x > 0 for airye's scaled Ai)
    case(name, "x", [(4,)], lambda x, f=function: f(x), x=np.array([0.3, 0.9, 1.6, 2.4]))
for program in (scipy_programs.expm, scipy_programs.solve_triangular, scipy_programs.lu,
                scipy_programs.cho, scipy_programs.solve, scipy_programs.inv_det_cholesky,
                scipy_programs.decompositions,
                scipy_programs.logsumexp, scipy_programs.softmax, scipy_programs.polygamma,
                scipy_programs.multigammaln, scipy_programs.spherical_bessel,
                scipy_programs.fourier, scipy_programs.signal,
                scipy_programs.distributions, scipy_programs.sparse_products,
                scipy_programs.sparse_of_derivatives,
                scipy_programs.interpolation):
    case(f"scipy-{program.__name__}", "program", [(12,)], lambda x, p=program: p(np, x),
         x=0.3 + 0.1 * np.arange(12.0))


# -- numpy.fft and the complex functions of real arrays: complex results by their parts ---------

def _parts(z):
    return np.concatenate([np.ravel(np.real(z)), np.ravel(np.imag(z))])


for function in (np.fft.fft, np.fft.ifft):
    for layout in "csr":
        for n, norm in ((None, None), (3, "ortho"), (7, "forward")):
            case(function, f"{layout}-n={n}-norm={norm}", [(5,), (5,)],
                 lambda a, b, f=function, n=n, norm=norm: _parts(f(a + 1j * b, n, norm=norm)),
                 layouts=layout * 2)
    case(function, "real-axis0", [(3, 4)], lambda a, f=function: _parts(f(a, axis=0)),
         layouts="t")
for function in (np.fft.fftn, np.fft.ifftn, np.fft.fft2, np.fft.ifft2):
    case(function, "complex", [(3, 4), (3, 4)], lambda a, b, f=function: _parts(f(a - 2j * b)),
         layouts="rs")
    case(function, "s-axes-norm", [(2, 3, 4)],
         lambda a, f=function: _parts(f(a, s=(4, 2), axes=(2, 0), norm="ortho")))
for function in (np.fft.rfft, np.fft.ihfft):
    for n in (None, 4, 9):
        case(function, f"n={n}", [(6,)], lambda a, f=function, n=n: _parts(f(a, n)),
             layouts="s")
    case(function, "axis0-forward", [(5, 3)],
         lambda a, f=function: _parts(f(a, axis=0, norm="forward")), layouts="t")
for function in (np.fft.irfft, np.fft.hfft):
    for n in (None, 5, 8):
        case(function, f"n={n}", [(4,), (4,)], lambda a, b, f=function, n=n: f(a + 1j * b, n),
             layouts="cr")
    case(function, "real-axis0-ortho", [(3, 4)],
         lambda a, f=function: f(a, axis=0, norm="ortho"))
for function in (np.fft.rfftn, np.fft.rfft2):
    case(function, "default", [(3, 4)], lambda a, f=function: _parts(f(a)), layouts="t")
    case(function, "s-axes", [(2, 3, 4)], lambda a, f=function: _parts(f(a, s=(5, 3), axes=(1, 2))))
for function in (np.fft.irfftn, np.fft.irfft2):
    case(function, "complex", [(3, 3), (3, 3)], lambda a, b, f=function: f(a + 1j * b),
         layouts="cs")
    case(function, "s-axes-norm", [(2, 3, 4)],
         lambda a, f=function: f(a, s=(4, 5), axes=(0, 2), norm="forward"))
for function in (np.fft.fftshift, np.fft.ifftshift):
    for axes in (None, 0, (1, 0)):
        case(function, f"axes={axes}", [(3, 4), (3, 4)],
             lambda a, b, f=function, axes=axes: _parts(f(a * (1 + 1j) + b, axes)), layouts="cr")
case(np.real, "real", [(3, 4)], lambda a: np.real(a) * 2.0, layouts="s")
case(np.imag, "real", [(3, 4)], lambda a: np.imag(a) + a, layouts="r")
case(np.real_if_close, "real", [(5,)], lambda a: np.real_if_close(a))
for function in (np.real, np.imag):
    case(function, "complex", [(5,), (5,)],
         lambda a, b, f=function: f(np.exp(1j * a) * b) * 1.0)
case(np.real_if_close, "complex-of-zero-imaginary-part", [(5,), (5,)],
     lambda a, b: np.real_if_close(np.exp(a) + 1j * (b - b)))


# -- ranges, parts of floats, conditions, fits and conversions --------------------------------

case(np.rollaxis, "axis-start", [(2, 3, 4)], lambda a: np.rollaxis(a, 2, 1), layouts="t")
case(np.rollaxis, "negative", [(2, 3, 4)], lambda a: np.rollaxis(a, -1) * 1.0, layouts="r")
case(np.atleast_3d, "shapes", [(), (4,), (3, 4)],
     lambda a, b, c: [np.ravel(r) for r in np.atleast_3d(a, b, c)], layouts="csr")
case(np.linspace, "scalars", [(), ()], lambda a, b: np.linspace(a, b * b, 5))
case(np.linspace, "arrays-axis", [(2,), (3, 1)],
     lambda a, b: np.linspace(a, b, 4, endpoint=False, axis=-1), layouts="sr")
case(np.linspace, "retstep", [(), (3,)],
     lambda a, b: np.linspace(a, b, 3, retstep=True))
case(np.logspace, "scalars", [(), ()], lambda a, b: np.logspace(a, b, 4, base=2.0))
case(np.logspace, "base-array", [(), (3,)],
     lambda a, b: np.logspace(a * 0.5, 1.0, 3, base=b * b + 1.0))
case(np.geomspace, "positive", [(2,), (2,)],
     lambda a, b: np.geomspace(a * a + 0.5, b * b + 2.0, 4, axis=1), layouts="rs")
case(np.geomspace, "negative", [(), ()],
     lambda a, b: np.geomspace(-(a * a) - 0.1, -(b * b) - 1.0, 3))
case(np.apply_along_axis, "vector", [(3, 4)],
     lambda a: np.apply_along_axis(lambda r: r * np.sum(r * r), 0, a), layouts="t")
case(np.apply_along_axis, "scalar-and-matrix", [(2, 3)],
     lambda a: [np.ravel(np.apply_along_axis(np.prod, 1, a)),
                np.ravel(np.apply_along_axis(lambda r: np.outer(r, r), -1, a))], layouts="s")
case(np.modf, "parts", [(6,)], lambda a: np.concatenate(np.modf(a * 3.0)), layouts="r")
case(np.frexp, "mantissa-times-exponent", [(6,)],
     lambda a: np.frexp(a * 5.0)[0] * np.frexp(a * 5.0)[1], layouts="s")
case(np.ldexp, "exponents", [(6,)], lambda a: np.ldexp(a, np.array([3, -1, 0, 7, -20, 2])))
case(np.divmod, "two-operands", [(5,), (5,)],
     lambda a, b: np.concatenate(np.divmod(a * 3.0, b * b + 0.5)), layouts="cr")
case(np.divmod, "constant-divisor", [(5,)], lambda a: np.divmod(a, 0.7)[1])
case(np.i0, "both-series", [(8,)], lambda a: np.i0(a * 5.0) * 1e-2)
case(np.i0, "at-zero", [(3,)], lambda a: np.i0(a), x=np.array([0.0, 1.0, -8.0]))
case(np.compress, "axis", [(3, 4)],
     lambda a: np.compress([True, False, True], a, axis=0), layouts="t")
case(np.compress, "flat-short-condition", [(3, 4)],
     lambda a: np.compress([False, True, True, False, True], a))
case(np.extract, "condition", [(3, 4)],
     lambda a: np.extract(np.arange(12).reshape(3, 4) % 3 == 1, a), layouts="s")
case(np.vander, "decreasing", [(4,)], lambda a: np.vander(a), layouts="r")
case(np.vander, "increasing-N", [(3,)], lambda a: np.vander(a, 5, increasing=True))
case(np.polyfit, "y", [(6,)], lambda y: np.polyfit(np.linspace(-1.0, 2.0, 6), y, 2))
case(np.polyfit, "x-y-weights", [(6,), (6, 2), (6,)],
     lambda x, y, w: np.polyfit(np.linspace(-1.0, 2.0, 6) + 0.05 * x, y, 1, w=w * w + 1.0))
case(np.polyfit, "cov", [(6,)],
     lambda y: [np.ravel(r) for r in np.polyfit(np.linspace(-1.0, 2.0, 6), y, 1, cov=True)])
for p in (None, -2, 1, -np.inf, "fro", "nuc"):
    case(np.linalg.cond, f"p={p}", [(3, 3)], lambda a, p=p: np.linalg.cond(a + EYE3, p))
case(np.linalg.cond, "stacked", [(2, 2, 2)], lambda a: np.linalg.cond(a + 2.0 * np.eye(2)))
case(np.min_scalar_type, "0-d", [(2,)],
     lambda a: a * np.dtype(np.min_scalar_type(a[0] * 1e5)).itemsize)
for function in (np.array, np.asarray, np.asanyarray):
    case(function, "list-like", [(3,)],
         lambda a, f=function: f([[a[0], 2.0], [a[1] * a[2], a[0]]], like=a) * 1.0)
case(np.array, "ndmin", [(3,)], lambda a: np.array(a, ndmin=2, like=a), layouts="s")

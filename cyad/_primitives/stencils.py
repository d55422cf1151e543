"""Stencils, convolutions and polynomials, written with other NumPy functions.

- np.convolve and np.correlate gather, from the longer operand padded with zeros,
  the window of every output element (a constant index), and multiply the windows by
  the shorter operand (np.matmul): bilinear, so either operand or both may be
  differentiated. The windows take memory of the output's length times the shorter
  operand's. The modes trim as NumPy's do, the shorter operand reversed where NumPy
  reverses it.
- np.gradient is NumPy's finite-difference formula (uniform spacing or coordinates,
  edge_order 1 or 2), the interior and the two edges joined by np.concatenate; the
  coefficients are computed in float64 and taken in the values' dtype (NumPy writes
  the result in that dtype too). Coordinates may be differentiated.
- np.trapezoid sums the trapezoids; x and dx may be differentiated.
- np.polyval is Horner's rule, in p and x.
- np.vander multiplies its columns out as NumPy does; np.polyfit is NumPy's least-squares
  fit through np.linalg.lstsq, differentiable in x, y and the weights.
"""
import warnings

import numpy as np

from cyad._primitives._table import (
    axes_of,
    composition,
    float_dtype_of,
    is_engine_array,
    ndim_of,
    shape_of,
)

# -- convolutions -------------------------------------------------------------------------

_LEFT = {"full": lambda n: n - 1, "same": lambda n: n // 2, "valid": lambda n: 0}


def _correlation(longer, shorter, mode):
    """NumPy's correlation of `longer` with `shorter` (at least as short): out[i] is the sum
    of shorter[j] * longer[i + j - left], zeros outside longer."""
    if mode not in _LEFT:
        raise ValueError(f"mode must be one of 'valid', 'same', or 'full' (got {mode!r})")
    n, m = shape_of(longer)[0], shape_of(shorter)[0]
    left = _LEFT[mode](m)
    length = {"full": n + m - 1, "same": n, "valid": n - m + 1}[mode]
    zeros = np.zeros(m, float_dtype_of(longer, shorter))
    padded = np.concatenate([zeros, longer, zeros])
    windows = padded[(np.arange(length)[:, None] + np.arange(m) + (m - left))]
    return np.matmul(windows, shorter)


def _vectors(a, v):
    a = a if is_engine_array(a) else np.asarray(a)
    v = v if is_engine_array(v) else np.asarray(v)
    if ndim_of(a) != 1 or ndim_of(v) != 1:
        raise ValueError("object too deep for desired array")
    if shape_of(a)[0] == 0:
        raise ValueError("a cannot be empty")
    if shape_of(v)[0] == 0:
        raise ValueError("v cannot be empty")
    return a, v


@composition(np.convolve)
def _convolve(a, v, mode="full"):
    a, v = _vectors(a, v)
    if shape_of(v)[0] > shape_of(a)[0]:
        a, v = v, a
    return _correlation(a, np.flip(v), mode)


@composition(np.correlate)
def _correlate(a, v, mode="valid"):
    a, v = _vectors(a, v)
    if shape_of(v)[0] > shape_of(a)[0]:   # NumPy correlates v with a, then reverses
        return np.flip(_correlation(v, a, mode))
    return _correlation(a, v, mode)


# -- differences and integrals -----------------------------------------------------------------

def _along(x, axis, ndim, start, stop):
    return x[(slice(None),) * axis + (slice(start, stop),) + (slice(None),) * (ndim - axis - 1)]


def _spacings(varargs, f, axes):
    """One spacing per axis: a number, or the coordinates (a 1-d array) of the axis."""
    if len(varargs) == 0:
        return [1.0] * len(axes)
    if len(varargs) == 1 and ndim_of(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        raise TypeError("invalid number of arguments")
    spacings = []
    for axis, d in zip(axes, varargs, strict=True):
        if ndim_of(d) == 0:
            spacings.append(d)
            continue
        if ndim_of(d) != 1:
            raise ValueError("distances must be either scalars or 1d")
        if shape_of(d)[0] != shape_of(f)[axis]:
            raise ValueError("when 1d, distances must match the length of the corresponding "
                             "dimension")
        spacings.append(d if is_engine_array(d) else np.asarray(d, np.float64))
    return spacings


def _coefficient(c, dtype, shape):
    # a coefficient array along the axis, in the values' dtype (computed in float64)
    c = c if is_engine_array(c) else np.asarray(c, np.float64).astype(dtype)
    return np.reshape(c, shape)


def _gradient_along(f, axis, spacing, edge_order):
    ndim, n = ndim_of(f), shape_of(f)[axis]
    if n < edge_order + 1:
        raise ValueError("Shape of array too small to calculate a numerical gradient, at least "
                         "(edge_order + 1) elements are required.")
    dtype = float_dtype_of(f)

    def part(start, stop):
        return _along(f, axis, ndim, start, stop)

    def one(i):
        return part(i, i + 1 if i != -1 else None)

    along = [1] * ndim
    along[axis] = -1
    if ndim_of(spacing) == 0:
        dx = spacing if is_engine_array(spacing) else float(spacing)
        inside = (part(2, None) - part(0, -2)) / (2.0 * dx)
        if edge_order == 1:
            first = (one(1) - one(0)) / dx
            last = (one(-1) - one(-2)) / dx
        else:
            first = (one(0) * -1.5 + one(1) * 2.0 + one(2) * -0.5) / dx
            last = (one(-3) * 0.5 + one(-2) * -2.0 + one(-1) * 1.5) / dx
        return np.concatenate([first, inside, last], axis)
    dx = np.diff(spacing)
    # coordinates: NumPy's second-order formula for uneven steps, inside
    dx1, dx2 = dx[:-1], dx[1:]
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    inside = (_coefficient(a, dtype, along) * part(0, -2) + _coefficient(b, dtype, along)
              * part(1, -1) + _coefficient(c, dtype, along) * part(2, None))
    if edge_order == 1:
        first = (one(1) - one(0)) / _coefficient(dx[0], dtype, ())
        last = (one(-1) - one(-2)) / _coefficient(dx[-1], dtype, ())
    else:
        d1, d2 = dx[0], dx[1]
        ends = [-(2.0 * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2),
                -d1 / (d2 * (d1 + d2))]
        first = sum(_coefficient(k, dtype, ()) * one(i) for i, k in enumerate(ends))
        d1, d2 = dx[-2], dx[-1]
        ends = [d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), (2.0 * d2 + d1) / (d2 * (d1 + d2))]
        last = sum(_coefficient(k, dtype, ()) * p for k, p in
                   zip(ends, (one(-3), one(-2), one(-1)), strict=True))
    return np.concatenate([first, inside, last], axis)


@composition(np.gradient)
def _gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's finite differences, differentiable in f and in the spacings."""
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    axes = axes_of(axis, ndim_of(f))
    if len(set(axes)) != len(axes):
        raise ValueError("duplicate value in 'axis'")
    results = [_gradient_along(f, a, s, edge_order)
               for a, s in zip(axes, _spacings(varargs, f, axes), strict=True)]
    return results[0] if len(results) == 1 else tuple(results)


@composition(np.trapezoid if hasattr(np, "trapezoid") else np.trapz)   # (NumPy 1's name)
def _trapezoid(y, x=None, dx=1.0, axis=-1):
    ndim = ndim_of(y)
    axis = axes_of(axis, ndim)[0]
    if x is None:
        d = dx if is_engine_array(dx) else float(dx)
    else:
        x = x if is_engine_array(x) else np.asarray(x)
        if ndim_of(x) == 1:
            d = np.reshape(np.diff(x), tuple(-1 if i == axis else 1 for i in range(ndim)))
        else:
            d = np.diff(x, axis=axis)
    n = shape_of(y)[axis]
    return np.sum(d * (_along(y, axis, ndim, 1, n) + _along(y, axis, ndim, 0, n - 1)) / 2.0, axis)


# -- polynomials ----------------------------------------------------------------------------

@composition(np.polyval)
def _polyval(p, x):
    """Horner's rule: y = y * x + p[i], from the leading coefficient."""
    if not is_engine_array(p):
        p = np.asarray(p)
    y = np.zeros_like(x) if is_engine_array(x) else np.zeros_like(np.asarray(x, float_dtype_of(p)))
    for i in range(shape_of(p)[0]):
        y = y * x + p[i]
    return y


@composition(np.vander)
class _vander:
    """The columns x**k, each the one before times x (NumPy's order of products), highest
    power first unless `increasing`. The result keeps x's float dtype (NumPy's is float64 at
    least)."""

    note = "the result keeps x's float dtype (NumPy's: float64 for float32 x)"

    def impl(x, N=None, increasing=False):
        if not is_engine_array(x):
            x = np.asarray(x)
        if ndim_of(x) != 1:
            raise ValueError("x must be a one-dimensional array or sequence.")
        n = shape_of(x)[0]
        N = n if N is None else N
        dtype = float_dtype_of(x)
        if N <= 0:
            return np.zeros((n, 0), dtype)
        columns = [np.ones(n, dtype)]
        for _ in range(1, N):
            columns.append(x if len(columns) == 1 else columns[-1] * x)
        return np.stack(columns if increasing else columns[::-1], 1)


@composition(np.polyfit)
class _polyfit:
    """NumPy's least squares: the Vandermonde matrix of x (weighted by w), its columns scaled
    to unit norm, np.linalg.lstsq, the coefficients scaled back. Differentiable in y, x and w
    where the Vandermonde matrix has full rank; deg is a constant."""

    note = "the result keeps the operands' float dtype; differentiable where the fit has full rank"

    def impl(x, y, deg, rcond=None, full=False, w=None, cov=False):
        order = int(deg) + 1
        x = x if is_engine_array(x) else np.asarray(x) + 0.0
        y = y if is_engine_array(y) else np.asarray(y) + 0.0
        if deg < 0:
            raise ValueError("expected deg >= 0")
        if ndim_of(x) != 1:
            raise TypeError("expected 1D vector for x")
        if shape_of(x)[0] == 0:
            raise TypeError("expected non-empty vector for x")
        if ndim_of(y) < 1 or ndim_of(y) > 2:
            raise TypeError("expected 1D or 2D array for y")
        if shape_of(x)[0] != shape_of(y)[0]:
            raise TypeError("expected x and y to have same length")
        n = shape_of(x)[0]
        if rcond is None:
            rcond = n * np.finfo(x.dtype).eps
        lhs, rhs = np.vander(x, order), y
        if w is not None:
            w = w if is_engine_array(w) else np.asarray(w) + 0.0
            if ndim_of(w) != 1:
                raise TypeError("expected a 1-d array for weights")
            if shape_of(w)[0] != shape_of(y)[0]:
                raise TypeError("expected w and y to have the same length")
            lhs = lhs * np.reshape(w, (-1, 1))
            rhs = rhs * (np.reshape(w, (-1, 1)) if ndim_of(rhs) == 2 else w)
        scale = np.sqrt(np.sum(lhs * lhs, axis=0))
        lhs = lhs / scale
        c, resids, rank, s = np.linalg.lstsq(lhs, rhs, rcond)
        c = np.transpose(np.transpose(c) / scale)
        if rank != order and not full:
            warnings.warn("Polyfit may be poorly conditioned",
                          getattr(np, "exceptions", np).RankWarning, stacklevel=4)
        if full:
            return c, resids, rank, s, rcond
        if not cov:
            return c
        base = np.linalg.inv(np.matmul(np.transpose(lhs), lhs)) / np.outer(scale, scale)
        if cov == "unscaled":
            factor = 1.0
        else:
            if n <= order:
                raise ValueError("the number of data points must exceed order to scale the "
                                 "covariance matrix")
            factor = resids / (n - order)
        if ndim_of(y) == 1:
            return c, base * factor
        return c, np.reshape(base, shape_of(base) + (1,)) * factor

"""scipy.signal's direct convolutions, linear filters and smoothing, on cyad's arrays.

Two primitives of their own carry everything here; the functions of SciPy's names are
compositions of them and of the table's operations.

- `correlation(in1, in2, offsets, shape)`: ``out[k] = sum_j in1[k + offsets + j] in2[j]``
  over the last ``len(shape)`` axes, in1 read as zero outside its bounds: one window of
  the full correlation. Leading axes of either operand are a batch (broadcast as NumPy
  does), so that a tangent's lanes ride along. Its value is the direct sum: np.correlate
  of the window of in1 it reads (SciPy's own 1-d direct sum) where the output is at least
  as long as in2, else np.einsum of a strided view of that window's sub-windows against in2
  (no copies; several times faster than SciPy's N-d direct sum, and than np.correlate for
  a short output, batches of either operand included). It is bilinear: the JVP is
  ``correlation(t1, in2) + correlation(in1, t2)``; the VJP gives in1 the correlation of the
  cotangent with in2 reversed (offsets ``-offsets - (m - 1)``, m in2's lengths) and in2 the
  correlation of in1 with the cotangent (the same offsets). An engine records one
  operation.
- `filtered(b, a, x, zi, axis, ndim)` -> ``(y, zf)``: scipy.signal.lfilter of x with the
  coefficients b and ``[1, *a]`` (a is the denominator after its leading 1) from the
  initial state zi, along `axis` of x's last `ndim` axes (leading axes: a batch, as
  above). With A y = B x + zi (causal convolutions of the sequences, zi entering the first
  samples), its JVP is three filters: ``filtered(b, a, dx, dzi) + filtered(db, a, x, 0) -
  filtered([0, *da], a, y, 0)`` (the last state padded with zeros). Its VJP runs the
  filter backwards: the all-pole filter ``[1, *a]`` on the reversed cotangent of y, from
  the state that zf's cotangent gives (its past outputs), makes w; with ``w_ext = [w,
  zf's cotangent]``, x's cotangent is the correlation of w_ext with b, b's (a's) that of
  w_ext with x (minus that with y, one sample on), and zi's the first samples of w_ext.
  Both rules are written in `filtered` and `correlation`, so they compose to any order.

The functions (SciPy's signatures):

- convolve, correlate with method="direct", and "auto" where SciPy's choose_conv_method
  (on the shapes and the dtype) picks the direct sum: one correlation each, in2 reversed
  for a convolution. The modes are windows of the full correlation: "full" starts at
  ``-(m - 1)``, "same" at ``-(m // 2)``, "valid" at 0, or at ``n - m`` where in2 is the
  larger (SciPy's swap). method="fft", "auto" where SciPy picks the FFT, and complex
  operands are `scipy_fourier`'s FFT convolution: the same bilinear operation.
- convolve2d, correlate2d: the same correlations ("same" of correlate2d starts at
  ``-((m - 1) // 2)``, as SciPy's); boundary "fill" (fillvalue a number, not
  differentiated), "wrap" and "symm" extend in1 by ``m - 1`` on each side with np.pad
  ("constant", "wrap", "symmetric"), which is what SciPy's boundaries are. Real operands.
- lfilter: ``filtered(b / a[0], a[1:] / a[0], x, zi)`` (zi as SciPy takes it, not
  scaled; zeros when None); b, a, x and zi may all be differentiated.
- lfilter_zi (SciPy's linear system, through np.linalg.solve), filtfilt (method "pad":
  SciPy's extensions, lfilter forwards then backwards from lfilter_zi's states; "gust":
  Gustafsson's states, SciPy's least-squares fit through np.linalg.lstsq),
  sosfilt (a cascade of `filtered` sections; sos[:, 3] must be 1, as SciPy checks, and
  is not differentiated), sosfilt_zi, sosfiltfilt.
- savgol_filter: linear in x. The coefficients are savgol_coeffs's; a mode other than
  "interp" is one correlation of x extended by np.pad (ndimage's "mirror", "nearest",
  "wrap", "constant" are np.pad's "reflect", "edge", "wrap", "constant"); "interp" is the
  correlation where the window fits and, at each end, SciPy's polynomial fit of the
  first (last) window_length samples, linear too: a matrix of window_length columns made
  by fitting the unit vectors (np.polyfit, evaluated as SciPy evaluates it), applied with
  np.matmul.
- detrend: "constant" subtracts the mean; "linear" subtracts, on each piece between the
  breakpoints, the least-squares line (the pseudo-inverse of SciPy's design matrix, a
  constant of the piece's length, then the line: two products).

Refused (NotImplementedError, naming the function): complex operands (but for convolve and
correlate), a differentiated fillvalue, cval or delta.

SciPy is imported when a function first runs, so cyad imports without it.
"""
import string

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from cyad._primitives._table import (
    Primitive,
    as_operand,
    axis_of,
    float_dtype_of,
    is_engine_array,
    lanes_padded,
    ndim_of,
    shape_of,
    unbroadcast,
)
from cyad._primitives.custom import EntryFunction
from cyad._primitives.scipy_fourier import SCIPY_FOURIER


# scipy_fourier's FFT convolutions, which convolve and correlate call where SciPy computes by FFT
_FOURIER = dict(SCIPY_FOURIER["scipy.signal"])


def _signal():
    import scipy.signal
    return scipy.signal


def _is_complex(a):
    from cyad._complex.array import is_complex
    return is_complex(a)


def _real_operands(name, *arrays):
    if any(_is_complex(a) for a in arrays):
        raise NotImplementedError(f"cyad: scipy.signal.{name} of complex arrays is not "
                                  "supported on cyad's arrays")


def _constant_number(value, name, function):
    if is_engine_array(value):
        raise NotImplementedError(f"cyad: scipy.signal.{function}'s {name} is not "
                                  "differentiated: pass a number")
    return value


def _result_dtype(*arrays):
    dtype = np.result_type(*arrays)
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


# -- the correlation core ---------------------------------------------------------------------

def _window(a, offsets, lengths):
    """a's elements at [offset, offset + length) along each of its last axes, zeros
    outside them."""
    lead = a.ndim - len(offsets)
    index, pads = [], []
    for o, length, n in zip(offsets, lengths, a.shape[lead:], strict=True):
        lo, hi = min(max(o, 0), n), min(max(o + length, 0), n)
        hi = max(hi, lo)
        before = min(max(lo - o, 0), length)
        index.append(slice(lo, hi))
        pads.append((before, length - before - (hi - lo)))
    a = a[(Ellipsis,) + tuple(index)]
    if any(p != (0, 0) for p in pads):
        a = np.pad(a, [(0, 0)] * lead + pads)
    return a


def _batch(shape, ndim):
    return tuple(shape[:len(shape) - ndim])


class _Correlation:
    def bind(in1, in2, *, offsets, shape):
        return (in1, in2), {"offsets": tuple(offsets), "shape": tuple(shape)}

    def impl(in1, in2, *, offsets, shape):
        in1, in2 = np.asarray(in1), np.asarray(in2)
        dtype = _result_dtype(in1, in2)
        k = len(shape)
        kernel = in2.shape[in2.ndim - k:]
        batch = np.broadcast_shapes(_batch(in1.shape, k), _batch(in2.shape, k))
        if 0 in shape or 0 in kernel or 0 in batch:
            return np.zeros(batch + tuple(shape), dtype)
        window = _window(in1.astype(dtype, copy=False), offsets,
                         [s + m - 1 for s, m in zip(shape, kernel, strict=True)])
        in2 = in2.astype(dtype, copy=False)
        if window.ndim == in2.ndim == 1 and shape[0] >= kernel[0]:
            # SciPy's own direct 1-d sum (np.correlate is slow where the output is the
            # shorter: a coefficient's cotangent, against a whole signal)
            return np.correlate(window, in2, "valid")
        # every window of in1 against in2: a strided view, summed over in2's axes by einsum
        # (without copies; batches broadcast by its "..."; faster than SciPy's N-d direct sum)
        windows = sliding_window_view(window, kernel, axis=tuple(range(window.ndim - k,
                                                                         window.ndim)))
        out, summed = string.ascii_letters[:k], string.ascii_letters[k:2 * k]
        return np.einsum(f"...{out}{summed},...{summed}->...{out}", windows, in2)

    def jvp(primals, tangents, *, offsets, shape):
        (a, b), (ta, tb) = primals, tangents
        params = dict(offsets=offsets, shape=shape)
        out = correlation(a, b, **params)
        ndim = max(ndim_of(a), ndim_of(b))
        tangent = None
        if ta is not None:
            tangent = correlation(lanes_padded(ta, ndim), b, **params)
        if tb is not None:
            other = correlation(a, lanes_padded(tb, ndim), **params)
            tangent = other if tangent is None else tangent + other
        return out, tangent

    def vjp(primals, cotangent, *, offsets, shape):
        a, b = primals
        k = len(shape)
        sa, sb = shape_of(a), shape_of(b)
        n, m = sa[len(sa) - k:], sb[len(sb) - k:]
        reversed_b = np.flip(b, axis=tuple(range(len(sb) - k, len(sb))))
        ga = correlation(cotangent, reversed_b,
                         offsets=tuple(-o - (mi - 1) for o, mi in zip(offsets, m, strict=True)),
                         shape=n)
        gb = correlation(a, cotangent, offsets=offsets, shape=m)
        return unbroadcast(ga, sa), unbroadcast(gb, sb)


correlation = EntryFunction(Primitive("correlation", vars(_Correlation)))


# -- convolve, correlate, convolve2d, correlate2d -----------------------------------------------

_MODES = ("full", "same", "valid")


def _check_mode(mode):
    if mode not in _MODES:
        raise ValueError(f"acceptable mode flags are 'valid', 'same', or 'full' (got {mode!r})")


def _window_of(mode, s1, s2, same_start):
    """(offsets, shape) of the correlation of in1 (lengths s1) with in2 (s2) in `mode`;
    `same_start(m)`: where "same" starts, before the full correlation's start."""
    if mode == "full":
        return ([-(m - 1) for m in s2], [n + m - 1 for n, m in zip(s1, s2, strict=True)])
    if mode == "same":
        return [-same_start(m) for m in s2], list(s1)
    if all(n >= m for n, m in zip(s1, s2, strict=True)):
        return [0] * len(s1), [n - m + 1 for n, m in zip(s1, s2, strict=True)]
    if all(n <= m for n, m in zip(s1, s2, strict=True)):   # SciPy swaps the operands
        return [n - m for n, m in zip(s1, s2, strict=True)], \
            [m - n + 1 for n, m in zip(s1, s2, strict=True)]
    raise ValueError("For 'valid' mode, one must be at least as large as the other in every "
                     "dimension")


def _reversed(a):
    return np.flip(a, axis=tuple(range(ndim_of(a))))


def _chosen_method(in1, in2, mode, method):
    """method, with "auto" resolved as SciPy resolves it: choose_conv_method on the shapes
    and the result's dtype (after convolve's swap)."""
    if method != "auto":
        return method
    s1, s2 = shape_of(in1), shape_of(in2)
    if mode == "valid" and not all(n >= m for n, m in zip(s1, s2, strict=True)):
        s1, s2 = s2, s1
    dtype = float_dtype_of(in1, in2)
    stand_in = [np.broadcast_to(np.zeros((), dtype), s) for s in (s1, s2)]
    return _signal().choose_conv_method(*stand_in, mode=mode)


def _direct(name, in1, in2, mode, method):
    """convolve (name) or correlate of SciPy's signature: the direct sum as one correlation;
    the FFT convolution (scipy_fourier) where SciPy computes one."""
    if method not in ("auto", "direct", "fft"):
        raise ValueError("Acceptable method flags are 'auto', 'direct', or 'fft'.")
    _check_mode(mode)
    in1, in2 = as_operand(in1), as_operand(in2)
    s1, s2 = shape_of(in1), shape_of(in2)
    fourier = _FOURIER[name]
    if len(s1) != len(s2) or not s1 or 0 in s1 or 0 in s2 or _is_complex(in1) \
            or _is_complex(in2):
        return fourier(in1, in2, mode, method)   # (its checks, scalars, complex operands)
    offsets, shape = _window_of(mode, s1, s2, lambda m: m // 2)   # (checks "valid" shapes)
    if _chosen_method(in1, in2, mode, method) == "fft":
        return fourier(in1, in2, mode, "fft")
    return correlation(in1, _reversed(in2) if name == "convolve" else in2, offsets=offsets,
                       shape=shape)


def _convolve(in1, in2, mode="full", method="auto"):
    return _direct("convolve", in1, in2, mode, method)


def _correlate(in1, in2, mode="full", method="auto"):
    return _direct("correlate", in1, in2, mode, method)


_BOUNDARIES = {"fill": "constant", "pad": "constant", "wrap": "wrap", "circular": "wrap",
               "symm": "symmetric", "symmetric": "symmetric"}


def _two_dimensional(name, in1, in2, mode, boundary, fillvalue):
    in1, in2 = as_operand(in1), as_operand(in2)
    if not ndim_of(in1) == ndim_of(in2) == 2:
        raise ValueError(f"{name} inputs must both be 2-D arrays")
    _check_mode(mode)
    if boundary not in _BOUNDARIES:
        raise ValueError("Acceptable boundary flags are 'fill', 'circular' (or 'wrap'), and "
                         "'symmetric' (or 'symm').")
    _real_operands(name, in1, in2, fillvalue)
    fillvalue = _constant_number(fillvalue, "fillvalue", name)
    s1, s2 = shape_of(in1), shape_of(in2)
    if 0 in s1 or 0 in s2:
        raise NotImplementedError(f"cyad: scipy.signal.{name} of empty arrays is not "
                                  "supported on cyad's arrays")
    same = (lambda m: m // 2) if name == "convolve2d" else (lambda m: (m - 1) // 2)
    offsets, shape = _window_of(mode, s1, s2, same)
    kernel = _reversed(in2) if name == "convolve2d" else in2
    pad = _BOUNDARIES[boundary]
    if mode != "valid" and (pad != "constant" or fillvalue != 0):
        # in1 extended by SciPy's boundary, m - 1 on each side
        options = {"constant_values": fillvalue} if pad == "constant" else {}
        in1 = np.pad(in1, [(m - 1, m - 1) for m in s2], pad, **options)
        offsets = [o + m - 1 for o, m in zip(offsets, s2, strict=True)]
    return correlation(in1, kernel, offsets=offsets, shape=shape)


def _convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    return _two_dimensional("convolve2d", in1, in2, mode, boundary, fillvalue)


def _correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0):
    return _two_dimensional("correlate2d", in1, in2, mode, boundary, fillvalue)


# -- the filter core ------------------------------------------------------------------------------

def _state_length(b, a):
    return max(shape_of(b)[-1], shape_of(a)[-1] + 1) - 1


def _along(v, axis, ndim):
    """A 1-d vector (with leading batch axes) shaped to lie along `axis` (< 0) of `ndim`
    axes."""
    shape = shape_of(v)
    return np.reshape(v, tuple(shape[:-1]) + tuple(
        shape[-1] if i == ndim + axis else 1 for i in range(ndim)))


def _part(x, axis, start, stop):
    return x[(Ellipsis, slice(start, stop)) + (slice(None),) * (-1 - axis)]


def _resized_shape(shape, axis, length):
    shape = list(shape)
    shape[axis] = length
    return tuple(shape)


def _with_length(x, axis, length):
    """x with `length` samples along axis: cropped, or padded with zeros after."""
    n = shape_of(x)[axis]
    if n >= length:
        return x if n == length else _part(x, axis, 0, length)
    zeros = np.zeros(_resized_shape(shape_of(x), axis, length - n), float_dtype_of(x))
    return np.concatenate([x, zeros], axis=axis)


class _Filter:
    def bind(b, a, x, zi, *, axis, ndim):
        return (b, a, x, zi), {"axis": axis, "ndim": ndim}

    def impl(b, a, x, zi, *, axis, ndim):
        b, a, x, zi = (np.asarray(v) for v in (b, a, x, zi))
        dtype = _result_dtype(b, a, x, zi)
        b, a, x, zi = (v.astype(dtype, copy=False) for v in (b, a, x, zi))
        core_x, core_zi = x.shape[x.ndim - ndim:], zi.shape[zi.ndim - ndim:]
        coefficients = np.broadcast_shapes(b.shape[:-1], a.shape[:-1])
        batch = np.broadcast_shapes(coefficients, _batch(x.shape, ndim), _batch(zi.shape, ndim))
        x = np.ascontiguousarray(np.broadcast_to(x, batch + core_x))
        zi = np.ascontiguousarray(np.broadcast_to(zi, batch + core_zi))
        lfilter = _signal().lfilter
        one = np.ones(a.shape[:-1] + (1,), dtype)
        denominator = np.concatenate([one, a], axis=-1)
        if not coefficients:
            return tuple(v.astype(dtype, copy=False) for v in
                         lfilter(b, denominator, x, axis=axis, zi=zi))
        y, zf = np.empty(batch + core_x, dtype), np.empty(batch + core_zi, dtype)
        b = np.broadcast_to(b, batch + b.shape[-1:])
        denominator = np.broadcast_to(denominator, batch + denominator.shape[-1:])
        for index in np.ndindex(*batch):
            y[index], zf[index] = lfilter(b[index], denominator[index], x[index], axis=axis,
                                          zi=zi[index])
        return y, zf

    def jvp(primals, tangents, *, axis, ndim):
        (b, a, x, zi), (tb, ta, tx, tzi) = primals, tangents
        params = dict(axis=axis, ndim=ndim)
        y, zf = filtered(b, a, x, zi, **params)
        # the batch axes of the tangents' results: every operand's, after the lanes' axis
        batch = max(ndim_of(b) - 1, ndim_of(a) - 1, ndim_of(x) - ndim, ndim_of(zi) - ndim)
        terms = []   # (sign, (dy, dz)) of each filter of the tangents
        if tx is not None or tzi is not None:
            lanes = next(t for t in (tx, tzi) if t is not None)
            count = shape_of(lanes)[0]
            if tx is None:
                tx = np.zeros((count,) + tuple(shape_of(x)), float_dtype_of(lanes))
            if tzi is None:
                tzi = np.zeros((count,) + tuple(shape_of(zi)), float_dtype_of(lanes))
            terms.append((1, filtered(b, a, lanes_padded(tx, batch + ndim),
                                      lanes_padded(tzi, batch + ndim), **params)))
        if tb is not None:
            zero = np.zeros(shape_of(zf), float_dtype_of(zf))
            terms.append((1, filtered(lanes_padded(tb, batch + 1), a, x, zero, **params)))
        if ta is not None:
            # -filtered([0, *da], a, y, 0): its state, of a's length, padded to zf's
            lead = tuple(shape_of(ta)[:-1])
            shifted = np.concatenate([np.zeros(lead + (1,), float_dtype_of(ta)), ta], axis=-1)
            zero = np.zeros(_resized_shape(shape_of(zi), axis, shape_of(a)[-1]),
                            float_dtype_of(zf))
            terms.append((-1, filtered(lanes_padded(shifted, batch + 1), a, y, zero,
                                       **params)))
        ty = tz = None
        for sign, (dy, dz) in terms:
            dz = _with_length(dz, axis, shape_of(zf)[axis])
            if sign < 0:
                dy, dz = -dy, -dz
            ty, tz = (dy, dz) if ty is None else (ty + dy, tz + dz)
        return (y, zf), (ty, tz)

    def vjp(primals, cotangent, *, axis, ndim):
        b, a, x, zi = primals
        gy, gz = cotangent
        na, nb = shape_of(a)[-1], shape_of(b)[-1]
        n = _state_length(b, a)
        if gz is None:
            gz = np.zeros(_resized_shape(shape_of(gy), axis, n), float_dtype_of(gy))
        at_zero = [0] * ndim    # (offsets of correlations that start at the first sample)
        # the all-pole filter [1, *a] backwards, from the state of its past outputs gz
        backwards = np.flip(gy, axis=axis)
        if na:
            offsets = list(at_zero)
            offsets[axis] = -(na - 1)
            head = _part(gz, axis, 0, na)
            shape = list(shape_of(head)[ndim_of(head) - ndim:])
            state = -np.flip(correlation(head, _along(a, axis, ndim), offsets=offsets,
                                         shape=shape), axis=axis)
            one = np.ones(tuple(shape_of(a)[:-1]) + (1,), float_dtype_of(a))
            backwards, _ = filtered(one, a, backwards, state, axis=axis, ndim=ndim)
        w = np.concatenate([np.flip(backwards, axis=axis), gz], axis=axis)
        core_x = list(shape_of(x)[ndim_of(x) - ndim:])
        gx = correlation(w, _along(b, axis, ndim), offsets=at_zero, shape=core_x)
        lags = [1] * ndim
        lags[axis] = nb
        gb = correlation(w, x, offsets=at_zero, shape=lags)
        gb = np.reshape(gb, tuple(shape_of(gb)[:ndim_of(gb) - ndim]) + (nb,))
        ga = None
        if na:
            y, _ = filtered(b, a, x, zi, axis=axis, ndim=ndim)
            later = list(at_zero)
            later[axis] = 1
            lags[axis] = na
            ga = -correlation(w, y, offsets=later, shape=lags)
            ga = unbroadcast(np.reshape(ga, tuple(shape_of(ga)[:ndim_of(ga) - ndim]) + (na,)),
                             shape_of(a))
        gzi = _part(w, axis, 0, n)
        return (unbroadcast(gb, shape_of(b)), ga, unbroadcast(gx, shape_of(x)),
                unbroadcast(gzi, shape_of(zi)))


filtered = EntryFunction(Primitive("filtered", vars(_Filter)))


# -- lfilter and its kin ----------------------------------------------------------------------

def _coefficients(b, a):
    b, a = np.atleast_1d(as_operand(b)), np.atleast_1d(as_operand(a))
    if ndim_of(b) != 1 or shape_of(b)[0] == 0:
        raise ValueError(f"Parameter b is not a non-empty 1d array, since b.shape="
                         f"{shape_of(b)}!")
    if ndim_of(a) != 1 or shape_of(a)[0] == 0:
        raise ValueError(f"Parameter a is not a non-empty 1d array, since a.shape="
                         f"{shape_of(a)}!")
    return b, a


def _normalised(b, a):
    """b / a[0] and a[1:] / a[0], as SciPy normalises them (a constant a[0] of 1 divides
    nothing; a denominator of one coefficient leaves an empty constant tail)."""
    if not is_engine_array(a):
        if a[0] == 0:
            raise ValueError("BUG: filter coefficient a[0] == 0 not supported yet")
        if a[0] == 1:
            return b, a[1:]
        return b / a[0], a[1:] / a[0]
    tail = a[1:] / a[0] if shape_of(a)[0] > 1 else np.zeros(0, float_dtype_of(a))
    return b / a[0], tail


def _signal_axis(x, axis):
    """axis of x, counted from the end (x at least 1-d)."""
    ndim = ndim_of(x)
    if ndim == 0:
        raise ValueError("x must be at least 1-D")
    return axis_of(axis, ndim) - ndim


def _lfilter(b, a, x, axis=-1, zi=None):
    b, a = _coefficients(b, a)
    x = as_operand(x)
    _real_operands("lfilter", b, a, x, zi)
    axis = _signal_axis(x, axis)
    expected = list(shape_of(x))
    expected[axis] = max(shape_of(a)[0], shape_of(b)[0]) - 1
    expected = tuple(expected)
    given = zi is not None
    if given:
        zi = as_operand(zi)
        shape = shape_of(zi)
        if len(shape) != len(expected) or shape[axis] != expected[axis] or not all(
                n in (m, 1) for n, m in zip(shape, expected, strict=True)):
            raise ValueError(f"Unexpected shape for parameter zi: expected {expected}, found "
                             f"{shape}.")
        if shape != expected:
            zi = np.broadcast_to(zi, expected)
    else:
        zi = np.zeros(expected, float_dtype_of(b, a, x))
    numerator, denominator = _normalised(b, a)
    y, zf = filtered(numerator, denominator, x, zi, axis=axis, ndim=ndim_of(x))
    return (y, zf) if given else y


def _lfilter_zi(b, a):
    b, a = np.atleast_1d(as_operand(b)), np.atleast_1d(as_operand(a))
    if ndim_of(b) != 1:
        raise ValueError("Numerator b must be 1-D.")
    if ndim_of(a) != 1:
        raise ValueError("Denominator a must be 1-D.")
    _real_operands("lfilter_zi", b, a)
    while shape_of(a)[0] > 1 and a[0] == 0.0:
        a = a[1:]
    if shape_of(a)[0] < 1:
        raise ValueError("There must be at least one nonzero `a` coefficient.")
    if is_engine_array(a) or a[0] != 1.0:
        b, a = b / a[0], a / a[0]
    n = max(shape_of(a)[0], shape_of(b)[0])
    if n < 2:
        raise ValueError("The length of `a` along the last axis must be at least 2.")
    dtype = float_dtype_of(a, b)
    a, b = (np.concatenate([v, np.zeros(n - shape_of(v)[0], dtype)])
            if shape_of(v)[0] < n else v for v in (a, b))
    # I - companion(a).T: the identity, minus ones above the diagonal, plus a[1:] in column 0
    eye = np.eye(n - 1, dtype=dtype)
    i_minus_a = eye - np.eye(n - 1, k=1, dtype=dtype) + np.reshape(a[1:], (-1, 1)) * eye[0]
    return np.linalg.solve(i_minus_a, b[1:] - a[1:] * b[0])


def _axis_part(x, axis, start=None, stop=None, step=None):
    index = [slice(None)] * ndim_of(x)
    index[axis] = slice(start, stop, step)
    return x[tuple(index)]


def _extended(x, n, axis, padtype):
    """SciPy's odd, even and constant extensions of x by n samples at each end."""
    length = shape_of(x)[axis]
    if padtype != "constant" and n > length - 1:
        raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                         f"x.shape[axis]-1, which is {length - 1}.")
    first, last = _axis_part(x, axis, 0, 1), _axis_part(x, axis, -1, None)
    if padtype == "constant":
        ones = [1] * ndim_of(x)
        ones[axis] = n
        ones = np.ones(ones, float_dtype_of(x))
        return np.concatenate([ones * first, x, ones * last], axis=axis)
    left = _axis_part(x, axis, n, 0, -1)
    right = _axis_part(x, axis, -2, -(n + 2), -1)
    if padtype == "odd":
        left, right = 2 * first - left, 2 * last - right
    return np.concatenate([left, x, right], axis=axis)


def _validate_pad(padtype, padlen, x, axis, ntaps):
    if padtype not in ("even", "odd", "constant", None):
        raise ValueError(f"Unknown value '{padtype}' given to padtype. padtype must be "
                         "'even', 'odd', 'constant', or None.")
    edge = 0 if padtype is None else ntaps * 3 if padlen is None else padlen
    if shape_of(x)[axis] <= edge:
        raise ValueError(f"The length of the input vector x must be greater than padlen, "
                         f"which is {edge}.")
    if padtype is not None and edge > 0:
        return edge, _extended(x, edge, axis, padtype)
    return edge, x


def _filtfilt(b, a, x, axis=-1, padtype="odd", padlen=None, method="pad", irlen=None):
    b, a = _coefficients(b, a)
    x = as_operand(x)
    _real_operands("filtfilt", b, a, x)
    if method not in ("pad", "gust"):
        raise ValueError("method must be 'pad' or 'gust'.")
    axis = _signal_axis(x, axis)
    if method == "gust":
        return _gust(b, a, x, axis, irlen)
    edge, ext = _validate_pad(padtype, padlen, x, axis,
                              max(shape_of(a)[0], shape_of(b)[0]))
    zi = _lfilter_zi(b, a)
    shape = [1] * ndim_of(x)
    shape[axis] = shape_of(zi)[0]
    zi = np.reshape(zi, shape)
    y, _ = _lfilter(b, a, ext, axis=axis, zi=zi * _axis_part(ext, axis, 0, 1))
    y, _ = _lfilter(b, a, np.flip(y, axis=axis), axis=axis,
                    zi=zi * _axis_part(y, axis, -1, None))
    y = np.flip(y, axis=axis)
    return _axis_part(y, axis, edge, -edge) if edge > 0 else y


def _gust(b, a, x, axis, irlen):
    """filtfilt's method="gust": SciPy's _filtfilt_gust, whose initial states of the forward
    and backward passes are the least-squares fit (np.linalg.lstsq, full rank) of the
    difference between filtering forwards-backwards and backwards-forwards, in `_lfilter`
    and the table's operations: linear in x, differentiable in b and a too."""
    order = max(shape_of(a)[0], shape_of(b)[0]) - 1
    if order == 0:
        return (b[0] / a[0]) ** 2 * x
    x = np.moveaxis(x, axis, -1)
    n = shape_of(x)[-1]
    m = n if irlen is None or n <= 2 * irlen else irlen
    dtype = float_dtype_of(b, a, x)
    # the response to a unit first state (column 0 of SciPy's Obs), delayed by k in column k
    unit = np.zeros(order, dtype)
    unit[0] = 1.0
    response, _ = _lfilter(b, a, np.zeros(m, dtype), zi=unit)
    obs = np.stack([np.concatenate([np.zeros(min(k, m), dtype), response[:max(m - k, 0)]])
                    for k in range(order)], axis=1)
    s = _lfilter(b, a, obs[::-1], axis=0)
    # SciPy's M (the states' effect on the difference) and W (on the result): side by side
    # where the fit spans x, else block-diagonal (the first and the last m samples)
    lhs, weights = (s[::-1] - obs, obs[::-1] - s), (s[::-1], obs[::-1])
    if m == n:
        lhs, weights = (np.concatenate(pair, axis=1) for pair in (lhs, weights))
    else:
        zeros = np.zeros((m, order), dtype)
        lhs, weights = (np.concatenate([np.concatenate([first, zeros], axis=1),
                                        np.concatenate([zeros, second], axis=1)])
                        for first, second in (lhs, weights))
    y_fb = np.flip(_lfilter(b, a, np.flip(_lfilter(b, a, x), -1)), -1)
    y_bf = _lfilter(b, a, np.flip(_lfilter(b, a, np.flip(x, -1)), -1))
    delta = y_bf - y_fb
    if m != n:
        delta = np.concatenate([delta[..., :m], delta[..., -m:]], axis=-1)
    batch = shape_of(delta)[:-1]
    columns = np.reshape(delta, (-1, shape_of(delta)[-1])).T
    states = np.linalg.lstsq(lhs, columns)[0].T
    fit = np.reshape(np.matmul(states, weights.T), batch + (shape_of(weights)[0],))
    if m == n:
        y = y_fb + fit
    else:
        y = np.concatenate([y_fb[..., :m] + fit[..., :m], y_fb[..., m:n - m],
                            y_fb[..., n - m:] + fit[..., m:]], axis=-1)
    return np.moveaxis(y, -1, axis)


def _sections(sos):
    sos = as_operand(sos)
    if ndim_of(sos) < 2:
        sos = np.reshape(sos, (1,) * (2 - ndim_of(sos)) + tuple(shape_of(sos)))
    if ndim_of(sos) != 2:
        raise ValueError("sos array must be 2D")
    if shape_of(sos)[1] != 6:
        raise ValueError("sos array must be shape (n_sections, 6)")
    if not np.all(sos[:, 3] == 1):
        raise ValueError("sos[:, 3] should be all ones")
    return sos, shape_of(sos)[0]


def _sosfilt(sos, x, axis=-1, zi=None):
    sos, count = _sections(sos)
    x = as_operand(x)
    _real_operands("sosfilt", sos, x, zi)
    axis = _signal_axis(x, axis)
    shape = list(shape_of(x))
    shape[axis] = 2
    shape = tuple(shape)
    given = zi is not None
    if given:
        zi = as_operand(zi)
        if shape_of(zi) != (count,) + shape:
            raise ValueError(f"Invalid zi shape. With axis={axis!r}, an input with shape "
                             f"{shape_of(x)!r}, and an sos array with {count} sections, zi "
                             f"must have shape {(count,) + shape!r}, got {shape_of(zi)!r}.")
    y, states = x, []
    for section in range(count):
        start = zi[section] if given else np.zeros(shape, float_dtype_of(sos, x))
        y, zf = filtered(sos[section, :3], sos[section, 4:], y, start, axis=axis,
                         ndim=ndim_of(x))
        states.append(zf)
    return (y, np.stack(states)) if given else y


def _sosfilt_zi(sos):
    sos = as_operand(sos)
    if ndim_of(sos) != 2 or shape_of(sos)[1] != 6:
        raise ValueError("sos must be shape (n_sections, 6)")
    _real_operands("sosfilt_zi", sos)
    states, scale = [], 1.0
    for section in range(shape_of(sos)[0]):
        b, a = sos[section, :3], sos[section, 3:]
        states.append(scale * _lfilter_zi(b, a))
        # b.sum() / a.sum(): the section's gain at frequency 0
        scale = scale * (np.sum(b) / np.sum(a))
    return np.stack(states)


def _sosfiltfilt(sos, x, axis=-1, padtype="odd", padlen=None):
    sos, count = _sections(sos)
    x = as_operand(x)
    _real_operands("sosfiltfilt", sos, x)
    axis = _signal_axis(x, axis)
    taps = 2 * count + 1 - min(int(np.sum(sos[:, 2] == 0)), int(np.sum(sos[:, 5] == 0)))
    edge, ext = _validate_pad(padtype, padlen, x, axis, taps)
    shape = [1] * ndim_of(x)
    shape[axis] = 2
    zi = np.reshape(_sosfilt_zi(sos), [count] + shape)
    y, _ = _sosfilt(sos, ext, axis=axis, zi=zi * _axis_part(ext, axis, 0, 1))
    y, _ = _sosfilt(sos, np.flip(y, axis=axis), axis=axis,
                    zi=zi * _axis_part(y, axis, -1, None))
    y = np.flip(y, axis=axis)
    return _axis_part(y, axis, edge, -edge) if edge > 0 else y


# -- savgol_filter and detrend ------------------------------------------------------------------

# ndimage's modes of savgol_filter as np.pad's
_SAVGOL_PADS = {"mirror": "reflect", "nearest": "edge", "wrap": "wrap", "constant": "constant"}


def _derivative_of_polynomials(p, m):
    """SciPy's _polyder: the m-th derivatives of the polynomials in p's columns (highest
    power first)."""
    if m == 0:
        return p
    n = p.shape[0]
    if n <= m:
        return np.zeros_like(p[:1])
    dp = p[:-m].copy()
    for k in range(m):
        dp *= np.arange(n - k - 1, m - k - 1, -1, dtype=p.dtype)[:, None]
    return dp


def _edge_fit(window_length, polyorder, deriv, delta, points):
    """The matrix (len(points), window_length) of SciPy's edge values: the polynomial
    fitted to window_length samples, its deriv-th derivative at `points` of the window."""
    fitted = np.polyfit(np.arange(window_length, dtype=np.float64), np.eye(window_length),
                        polyorder)
    fitted = _derivative_of_polynomials(fitted, deriv)
    values = np.zeros((len(points), window_length))
    for row in fitted:   # Horner's rule, as np.polyval
        values = values * np.asarray(points, np.float64)[:, None] + row
    return values / delta ** deriv


def _times_along(matrix, x, axis):
    """matrix @ x along axis of x (< 0)."""
    moved = np.moveaxis(x, axis, -1)
    return np.moveaxis(np.matmul(moved, np.asarray(matrix).T), -1, axis)


def _savgol_filter(x, window_length, polyorder, deriv=0, delta=1.0, axis=-1, mode="interp",
                   cval=0.0):
    if mode not in ("mirror", "constant", "nearest", "interp", "wrap"):
        raise ValueError("mode must be 'mirror', 'constant', 'nearest' 'wrap' or 'interp'.")
    x = as_operand(x)
    _real_operands("savgol_filter", x)
    delta = _constant_number(delta, "delta", "savgol_filter")
    cval = _constant_number(cval, "cval", "savgol_filter")
    if not is_engine_array(x) and x.dtype not in (np.float32, np.float64):
        x = x.astype(np.float64)
    dtype = float_dtype_of(x)
    coefficients = _signal().savgol_coeffs(window_length, polyorder, deriv=deriv, delta=delta)
    axis = _signal_axis(x, axis)
    ndim = ndim_of(x)
    n = shape_of(x)[axis]
    w = window_length
    kernel = _along(np.flip(coefficients).astype(dtype), axis, ndim)
    # convolve1d's window for y[i]: x[i - (w - 1) // 2 + j], j < w
    offsets = [0] * ndim
    shape = list(shape_of(x))
    if mode != "interp":
        if mode == "constant" and cval == 0:
            offsets[axis] = -((w - 1) // 2)
        else:
            pads = [(0, 0)] * ndim
            pads[axis] = (w, w)
            options = {"constant_values": cval} if mode == "constant" else {}
            x = np.pad(x, pads, _SAVGOL_PADS[mode], **options)
            offsets[axis] = w - (w - 1) // 2
        return correlation(x, kernel, offsets=offsets, shape=shape)
    if w > n:
        raise ValueError("If mode is 'interp', window_length must be less than or equal to "
                         "the size of x.")
    half = w // 2
    parts = []
    if half:
        left = _edge_fit(w, polyorder, deriv, delta, np.arange(half)).astype(dtype)
        parts.append(_times_along(left, _axis_part(x, axis, 0, w), axis))
    if n - 2 * half:
        offsets[axis] = half - (w - 1) // 2
        shape[axis] = n - 2 * half
        parts.append(correlation(x, kernel, offsets=offsets, shape=shape))
    if half:
        right = _edge_fit(w, polyorder, deriv, delta, np.arange(w - half, w)).astype(dtype)
        parts.append(_times_along(right, _axis_part(x, axis, n - w, n), axis))
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)


def _detrend(data, axis=-1, type="linear", bp=0, overwrite_data=False):
    if type not in ("linear", "l", "constant", "c"):
        raise ValueError("Trend type must be 'linear' or 'constant'.")
    data = as_operand(data)
    _real_operands("detrend", data)
    if not is_engine_array(data) and data.dtype.kind != "f":
        data = data.astype(np.float64)
    if type in ("constant", "c"):
        return data - np.mean(data, axis, keepdims=True)
    bp = _constant_number(bp, "bp", "detrend")
    axis = _signal_axis(data, axis)
    n = shape_of(data)[axis]
    bp = np.sort(np.unique(np.concatenate(np.atleast_1d(0, np.asarray(bp), n))))
    if np.any(bp > n):
        raise ValueError("Breakpoints must be less than length of data along given axis.")
    dtype = float_dtype_of(data)
    pieces = []
    for lo, hi in zip(bp[:-1], bp[1:]):
        count = int(hi - lo)
        design = np.ones((count, 2))
        design[:, 0] = np.arange(1, count + 1) / count
        # the least-squares line of the piece: design @ pinv(design) @ piece
        piece = _axis_part(data, axis, int(lo), int(hi))
        line = _times_along(design.astype(dtype),
                            _times_along(np.linalg.pinv(design).astype(dtype), piece, axis),
                            axis)
        pieces.append(piece - line)
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces, axis=axis)


SCIPY_SIGNAL = {
    "scipy.signal": {
        "convolve": _convolve,
        "correlate": _correlate,
        "convolve2d": _convolve2d,
        "correlate2d": _correlate2d,
        "lfilter": _lfilter,
        "lfilter_zi": _lfilter_zi,
        "filtfilt": _filtfilt,
        "sosfilt": _sosfilt,
        "sosfilt_zi": _sosfilt_zi,
        "sosfiltfilt": _sosfiltfilt,
        "savgol_filter": _savgol_filter,
        "detrend": _detrend,
    },
}

# convolve and correlate take complex operands too (the FFT convolution's)
_convolve.takes_complex = _correlate.takes_complex = True

"""scipy.fft and scipy.signal's FFT convolutions, on cyad's arrays.

- scipy.fft's discrete Fourier transforms (fft ... irfftn, hfft, ihfft, fftshift,
  ifftshift) are numpy.fft's, which cyad differentiates (`fourier`): the same transforms,
  lengths, axes and norms. SciPy's ``overwrite_x`` and ``workers`` change no value and are
  ignored; a ``plan`` is refused; an ``s`` entry of -1 is the input's length along its
  axis. fftfreq and rfftfreq are numpy.fft's frequencies divided by the spacing ``d``
  (which may be differentiated).
- The real transforms (dct, idct, dst, idst, dctn, idctn, dstn, idstn; types 1-4, every
  norm, ``orthogonalize``) are one linear core, `r2r`, a primitive whose operand and result
  are real: an engine records one operation per transform, and a tangent's lanes ride
  along as a leading axis of one batched scipy.fft call (the axes are counted from the
  end). Its value is SciPy's. An inverse transform is the forward transform of the
  inverse type with the norm swapped (idct(type 2, "backward") is dct(type 3,
  "forward"), SciPy's own definition). The transpose: along each axis SciPy's transform
  is ``scale * diag(after) @ M_t @ diag(before)``, with M_t the unnormalised matrix of
  type t, and ``M_t^T = diag(g) @ M_t' @ diag(h)`` with t' the inverse type (2 <-> 3, 1
  and 4 themselves) and g, h from the unnormalised definitions (`_transposed_weights`);
  so the transpose is ``scale * diag(before g) @ M_t' @ diag(h after)``, one scipy.fft
  call of type t' between two scalings, and the transpose of that is the transform again.
- scipy.signal.fftconvolve, oaconvolve, convolve and correlate (every ``method``: the
  direct sum and the FFT product are the same bilinear operation) are SciPy's
  fftconvolve written with numpy.fft's rfftn/irfftn (fftn/ifftn for complex operands):
  transform both operands zero-padded to the full length, multiply, transform back,
  crop to the mode. Either operand, or both, may be differentiated.

SciPy is imported when a function first runs, so cyad imports without it.
"""
import math

import numpy as np

from cyad._primitives._table import Primitive, as_operand, axes_of, shape_of
from cyad._primitives.custom import EntryFunction
from cyad._primitives.fourier import _resized


def _fft():
    import scipy.fft
    return scipy.fft


# -- the real transforms' core ---------------------------------------------------------------

_INVERSE_TYPE = {1: 1, 2: 3, 3: 2, 4: 4}
_SWAPPED = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _factors(kind, type, n, norm, orthogonalize):
    """(scale, before, after) of SciPy's transform of n points: scale * diag(after) @ M @
    diag(before), M unnormalised (norm "backward", orthogonalize False)."""
    period = {("dct", 1): 2 * (n - 1), ("dst", 1): 2 * (n + 1)}.get((kind, type), 2 * n)
    scale = {"backward": 1.0, "ortho": 1.0 / math.sqrt(period), "forward": 1.0 / period}[norm]
    before, after = np.ones(n), np.ones(n)
    if orthogonalize:
        root = math.sqrt(2.0)
        end = 0 if kind == "dct" else -1
        if (kind, type) == ("dct", 1):
            before[[0, -1]] = root
            after[[0, -1]] = 1.0 / root
        elif type == 2:
            after[end] = 1.0 / root
        elif type == 3:
            before[end] = root
    return scale, before, after


def _transposed_weights(kind, type, n):
    """(g, h) with M_t^T = diag(g) @ M_t' @ diag(h), M unnormalised: DCT-I's coefficients
    (1, 2, ..., 2, 1) on the input's ends, DCT-III's (1, 2, ...) on x_0 against DCT-II's
    uniform 2, DST-III's (..., 2, 1) on x_{N-1}; DCT-IV and DST-I, IV are symmetric."""
    g, h = np.ones(n), np.ones(n)
    end = 0 if kind == "dct" else -1
    if (kind, type) == ("dct", 1):
        g[1:-1] = 2.0
        h[1:-1] = 0.5
    elif type == 2:
        h[end] = 2.0
    elif type == 3:
        g[end] = 0.5
    return g, h


def _along(weights, axis, dtype):
    """A vector of weights shaped to scale an array along `axis` (< 0)."""
    return np.reshape(weights.astype(dtype), (-1,) + (1,) * (-1 - axis))


class _R2R:
    def bind(x, *, kind, type, axes, norm, orthogonalize, transposed):
        return (x,), {"kind": kind, "type": type, "axes": axes, "norm": norm,
                      "orthogonalize": orthogonalize, "transposed": transposed}

    def coupled_axes(*, axes, **params):
        return tuple(axes)

    def impl(x, *, kind, type, axes, norm, orthogonalize, transposed):
        x = np.asarray(x)
        dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        transform = getattr(_fft(), kind + "n")
        if not transposed:
            return transform(x, type=type, axes=axes, norm=norm,
                             orthogonalize=orthogonalize).astype(dtype, copy=False)
        # scale * diag(before g) @ M_t' @ diag(h after) along each axis
        total = 1.0
        inputs, outputs = [], []
        for axis in axes:
            n = x.shape[axis]
            scale, before, after = _factors(kind, type, n, norm, orthogonalize)
            g, h = _transposed_weights(kind, type, n)
            total *= scale
            inputs.append(_along(h * after, axis, dtype))
            outputs.append(_along(before * g, axis, dtype))
        for w in inputs:
            x = x * w
        y = transform(x, type=_INVERSE_TYPE[type], axes=axes, norm="backward",
                      orthogonalize=False)
        for w in outputs:
            y = y * w
        return (y * dtype.type(total)).astype(dtype, copy=False)

    def jvp(primals, tangents, *, kind, type, axes, norm, orthogonalize, transposed):
        params = dict(kind=kind, type=type, axes=axes, norm=norm, orthogonalize=orthogonalize,
                      transposed=transposed)
        out = r2r(primals[0], **params)
        return out, None if tangents[0] is None else r2r(tangents[0], **params)

    def vjp(primals, cotangent, *, kind, type, axes, norm, orthogonalize, transposed):
        return (r2r(cotangent, kind=kind, type=type, axes=axes, norm=norm,
                    orthogonalize=orthogonalize, transposed=not transposed),)


_entry = Primitive("r2r", vars(_R2R))
_entry.linear = True   # (no second-order terms: the tape's Hessian sparsity skips it)
_entry.coupled_axes = _R2R.coupled_axes   # (a batch's sparsity, as numpy.fft's cores)
r2r = EntryFunction(_entry)


# -- scipy.fft's real transforms ---------------------------------------------------------------

def _real_transform(x, kind, type, s, axes, norm, orthogonalize, inverse, name):
    if type not in _INVERSE_TYPE:
        raise ValueError(f"cyad: scipy.fft.{name}'s type must be 1, 2, 3 or 4, not {type!r}")
    if norm is None:
        norm = "backward"
    if norm not in _SWAPPED:
        raise ValueError(f'Invalid norm value {norm!r}, should be "backward", "ortho" or '
                         '"forward"')
    orthogonalize = norm == "ortho" if orthogonalize is None else bool(orthogonalize)
    if inverse:   # (SciPy's definition of the inverses)
        type, norm = _INVERSE_TYPE[type], _SWAPPED[norm]
    s, axes = _lengths(x, s, axes, name)
    ndim = len(shape_of(x))
    if (kind, type) == ("dct", 1) and min(s) < 2:
        raise ValueError(f"cyad: scipy.fft.{name} of type 1 takes at least 2 points, not "
                         f"{min(s)}")
    params = dict(kind=kind, type=type, axes=tuple(a - ndim for a in axes), norm=norm,
                  orthogonalize=orthogonalize, transposed=False)
    from cyad._complex.array import ComplexArray, is_complex, parts, real_dtype
    if not is_complex(x):
        return r2r(_cropped_or_padded(x, axes, s), **params)
    # a complex array: its real and imaginary parts transformed apart, as SciPy does
    re, im = (None if p is None else r2r(_cropped_or_padded(p, axes, s), **params)
              for p in parts(x))
    shape = shape_of(x)
    shape = tuple(s[axes.index(i)] if i in axes else m for i, m in enumerate(shape))
    return ComplexArray(re, im, shape, real_dtype(x))


def _cropped_or_padded(x, axes, s):
    for axis, n in zip(axes, s):
        x = _resized(x, axis, n)
    return x


def _lengths(x, s, axes, name):
    """SciPy's `s` and `axes` of an n-dimensional transform as lists of non-negative axes
    and lengths (an int for either is one axis; an `s` entry of -1 is x's length)."""
    shape = shape_of(x)
    ndim = len(shape)
    if isinstance(s, (int, np.integer)):
        s = (s,)
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    axes = list(axes_of(axes, ndim))
    if s is None:
        s = [shape[a] for a in axes]
    if len(s) != len(axes):
        raise ValueError(f"cyad: scipy.fft.{name}: when given, axes and s must have the same "
                         "length")
    s = [shape[a] if n == -1 else int(n) for a, n in zip(axes, s)]
    if any(n < 1 for n in s):
        raise ValueError(f"cyad: scipy.fft.{name}: invalid number of data points ({min(s)})")
    return s, axes


def _real_one(kind, inverse):
    name = ("i" if inverse else "") + kind

    def transform(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
                  orthogonalize=None):
        return _real_transform(x, kind, type, None if n is None else (n,), (axis,), norm,
                               orthogonalize, inverse, name)
    transform.__name__ = name
    return transform


def _real_n(kind, inverse):
    name = ("i" if inverse else "") + kind + "n"

    def transform(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
                  orthogonalize=None):
        return _real_transform(x, kind, type, s, axes, norm, orthogonalize, inverse, name)
    transform.__name__ = name
    return transform


# -- scipy.fft's complex transforms: numpy.fft's -----------------------------------------------

def _no_plan(plan, name):
    if plan is not None:
        raise NotImplementedError(f"cyad: scipy.fft.{name}'s plan is not supported on cyad's "
                                  "arrays; leave plan=None")


def _complex_one(name):
    function = getattr(np.fft, name)

    def transform(x, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, *,
                  plan=None):
        _no_plan(plan, name)
        return function(x, n, axis, norm)
    transform.__name__ = name
    return transform


def _complex_n(name, default_axes):
    function = getattr(np.fft, name)

    def transform(x, s=None, axes=default_axes, norm=None, overwrite_x=False, workers=None, *,
                  plan=None):
        _no_plan(plan, name)
        if s is not None:   # (SciPy's -1 entries; numpy.fft takes the lengths themselves)
            s, axes = _lengths(x, s, axes, name)
        elif isinstance(axes, (int, np.integer)):
            axes = (axes,)
        return function(x, s, axes, norm)
    transform.__name__ = name
    return transform


def _fftshift(x, axes=None):
    return np.fft.fftshift(x, axes)


def _ifftshift(x, axes=None):
    return np.fft.ifftshift(x, axes)


def _frequencies(name):
    function = getattr(np.fft, name)

    def frequencies(n, d=1.0, *, xp=None, device=None):
        if xp is not None or device is not None:
            raise NotImplementedError(f"cyad: scipy.fft.{name}'s xp and device are not "
                                      "supported on cyad's arrays")
        if isinstance(n, (int, np.integer)):
            return function(n) / d
        raise TypeError(f"cyad: scipy.fft.{name}'s n is a count of points, not an array")
    frequencies.__name__ = name
    return frequencies


# -- scipy.signal's convolutions ---------------------------------------------------------------

_MODES = ("full", "same", "valid")


def _check_mode(mode):
    if mode not in _MODES:
        raise ValueError(f"acceptable mode flags are 'valid', 'same', or 'full' (got {mode!r})")


def _swap_needed(mode, s1, s2, axes):
    """Whether 'valid' mode takes in2 as the larger operand (SciPy's _inputs_swap_needed)."""
    if mode != "valid" or not s1:
        return False
    ok1 = all(s1[i] >= s2[i] for i in axes)
    ok2 = all(s2[i] >= s1[i] for i in axes)
    if not (ok1 or ok2):
        raise ValueError("For 'valid' mode, one must be at least as large as the other in "
                         "every dimension")
    return not ok1


def _centered(a, shape):
    current = shape_of(a)
    return a[tuple(slice((m - n) // 2, (m - n) // 2 + n) for m, n in zip(current, shape))]


def _fftconvolve(in1, in2, mode="full", axes=None):
    from cyad._complex.array import is_complex
    _check_mode(mode)
    in1, in2 = as_operand(in1), as_operand(in2)
    s1, s2 = shape_of(in1), shape_of(in2)
    if len(s1) == len(s2) == 0:
        return in1 * in2
    if len(s1) != len(s2):
        raise ValueError("in1 and in2 should have the same dimensionality")
    if 0 in s1 or 0 in s2:
        raise NotImplementedError("cyad: scipy.signal's convolutions of empty arrays are not "
                                  "supported on cyad's arrays")
    given = axes is not None
    axes = list(axes_of(axes, len(s1)))
    if given and not axes:
        raise ValueError("when provided, axes cannot be empty")
    # (an axis where an operand has one point is a product: broadcasting does it)
    axes = [a for a in axes if s1[a] != 1 and s2[a] != 1]
    if not all(s1[a] == s2[a] or s1[a] == 1 or s2[a] == 1
               for a in range(len(s1)) if a not in axes):
        raise ValueError(f"incompatible shapes for in1 and in2: {s1} and {s2}")
    if _swap_needed(mode, s1, s2, axes):
        in1, in2, s1, s2 = in2, in1, s2, s1
    shape = [s1[i] + s2[i] - 1 if i in axes else max(s1[i], s2[i]) for i in range(len(s1))]
    if not axes:
        full = in1 * in2
    else:
        complex_result = is_complex(in1) or is_complex(in2)
        fshape = [_fft().next_fast_len(shape[a], not complex_result) for a in axes]
        forward, inverse = (np.fft.fftn, np.fft.ifftn) if complex_result else \
            (np.fft.rfftn, np.fft.irfftn)
        product = forward(in1, fshape, axes=axes) * forward(in2, fshape, axes=axes)
        full = inverse(product, fshape, axes=axes)[tuple(slice(n) for n in shape)]
    if mode == "full":
        return full
    if mode == "same":
        return _centered(full, s1)
    return _centered(full, [s1[i] - s2[i] + 1 if i in axes else shape[i]
                            for i in range(len(s1))])


def _oaconvolve(in1, in2, mode="full", axes=None):
    # (overlap-add computes the same convolution in blocks)
    return _fftconvolve(in1, in2, mode, axes)


def _check_method(method):
    if method not in ("auto", "direct", "fft"):
        raise ValueError("Acceptable method flags are 'auto', 'direct', or 'fft'.")


def _checked_operands(in1, in2, mode, method):
    """convolve's and correlate's checks: SciPy's 'valid' mode asks one operand to be at
    least as large as the other along every axis, also where one has a single point."""
    _check_method(method)
    _check_mode(mode)
    in1, in2 = as_operand(in1), as_operand(in2)
    s1, s2 = shape_of(in1), shape_of(in2)
    if len(s1) != len(s2):
        raise ValueError("in1 and in2 should have the same dimensionality")
    _swap_needed(mode, s1, s2, range(len(s1)))
    return in1, in2


def _convolve(in1, in2, mode="full", method="auto"):
    return _fftconvolve(*_checked_operands(in1, in2, mode, method), mode)


def _correlate(in1, in2, mode="full", method="auto"):
    in1, in2 = _checked_operands(in1, in2, mode, method)
    reversed_ = in2[(slice(None, None, -1),) * len(shape_of(in2))]
    return _fftconvolve(in1, np.conjugate(reversed_), mode)


SCIPY_FOURIER = {
    "scipy.fft": {
        **{name: _complex_one(name) for name in ("fft", "ifft", "rfft", "irfft", "hfft",
                                                  "ihfft")},
        **{name: _complex_n(name, (-2, -1)) for name in ("fft2", "ifft2", "rfft2", "irfft2")},
        **{name: _complex_n(name, None) for name in ("fftn", "ifftn", "rfftn", "irfftn")},
        "fftshift": _fftshift,
        "ifftshift": _ifftshift,
        "fftfreq": _frequencies("fftfreq"),
        "rfftfreq": _frequencies("rfftfreq"),
        **{("i" if inverse else "") + kind: _real_one(kind, inverse)
           for kind in ("dct", "dst") for inverse in (False, True)},
        **{("i" if inverse else "") + kind + "n": _real_n(kind, inverse)
           for kind in ("dct", "dst") for inverse in (False, True)},
    },
    "scipy.signal": {
        "fftconvolve": _fftconvolve,
        "oaconvolve": _oaconvolve,
        "convolve": _convolve,
        "correlate": _correlate,
    },
}

# the functions that take complex arrays too (the supported-functions table's column): all
# but the frequencies
for _functions in SCIPY_FOURIER.values():
    for _name, _function in _functions.items():
        _function.takes_complex = not _name.endswith("freq")

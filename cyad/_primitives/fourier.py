"""numpy.fft: the discrete Fourier transforms, on the parts of complex arrays.

Every transform is one of three real-linear cores, primitives of their own (`c2c`, `r2c`,
`c2r`), whose operands and results are real and imaginary parts (cyad._complex): an engine
records one operation per transform, and a tangent's lanes ride along as a leading axis of
the same batched transform (the cores' axes are counted from the end, so that one call maps
values and tangents). Each core is linear, with the transpose of another:

- ``c2c``: scale times the unnormalised forward DFT over `axes` (or the inverse DFT, without
  1/N). Its transpose is the other direction, same scale (the DFT matrix is symmetric, so
  its adjoint is its conjugate).
- ``r2c``: scale times rfft along `axis`, the bins strictly between 0 and the Nyquist bin
  times `interior`. Its transpose is c2r with interior / 2 (an interior bin stands for
  itself and its conjugate mirror).
- ``c2r``: the interior bins times `interior`, then scale times the unnormalised irfft to
  `n` points (the imaginary parts of bin 0 and the Nyquist bin dropped, as NumPy does). Its
  transpose is r2c with 2 interior.

Each core's ``into(operands, results, **params)`` makes a call of no arguments that computes
into given result arrays, with the complex buffers it needs made once: a recorded tape's
replay runs it on its own buffers (cyad/_tape/lowering.pyx), and ``impl`` is into on new
arrays, so that a record and a replay compute alike. The transforms are SciPy's pocketfft
where SciPy is installed (plans kept between calls, a batch of transforms shared among the
cores), else numpy.fft.

NumPy's functions (fft ... irfftn, hfft, ihfft, fftshift, ifftshift) are compositions of
the cores, with NumPy's lengths `n`/`s` (the input cropped or zero-padded), axes and norms.
"""
import functools
import math
import os

import numpy as np

from cyad._primitives._table import Primitive, composition, shape_of
from cyad._primitives.custom import EntryFunction

_SCALES = {None: 0, "backward": 0, "ortho": 1, "forward": 2}


def _norm_scale(norm, n, inverse):
    """The factor of a transform of n points: NumPy's norm, 1/n on the inverse by default."""
    if norm not in _SCALES:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         '"forward".')
    power = _SCALES[norm]
    if inverse:
        power = 2 - power
    return 1.0 if power == 0 else 1.0 / math.sqrt(n) if power == 1 else 1.0 / n


def _dtype(*parts):
    dtype = np.result_type(*[p.dtype for p in parts])
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)


def _complex_dtype(dtype):
    return np.complex64 if dtype == np.float32 else np.complex128


_POCKETFFT = []      # SciPy's pocketfft module or None, once looked for


def _pocketfft():
    """SciPy's pocketfft module (where SciPy is installed), whose transforms write into out=
    and keep their plans between calls (numpy.fft makes its plan anew at every call: a
    quarter of a transform's time at 2**16 points); None without it."""
    if not _POCKETFFT:
        try:
            from scipy.fft._pocketfft import pypocketfft
            pypocketfft.c2r(np.zeros(2, complex), (0,), 2, False, 0, np.empty(2), 1)
        except Exception:  # (a private module: any failure means NumPy's transforms)
            pypocketfft = None
        _POCKETFFT.append(pypocketfft)
    return _POCKETFFT[0]


# numpy.fft writes into out= from NumPy 2.0 (in the precision of its operand: complex64 stays
# single); before, its result is copied there
_FFT_OUT = np.lib.NumpyVersion(np.__version__) >= "2.0.0"


def _numpy_into(transform, a, out, **options):
    if _FFT_OUT:
        return functools.partial(transform, a, out=out, **options)
    return lambda: np.copyto(out, transform(a, **options))


def _threads(shape, axes):
    # pocketfft shares a batch of transforms among threads (one transform is never split)
    batch = math.prod(shape) // max(math.prod(shape[ax] for ax in axes), 1)
    return max(1, min(batch, os.cpu_count() or 1))


def _c2c_into(z, w, axes, inverse):
    """A call that writes into w the unnormalised DFT of z over axes (inverse: without
    1/N)."""
    pocketfft = _pocketfft()
    if pocketfft is not None:
        return functools.partial(pocketfft.c2c, z, axes, not inverse, 0, w,
                                 _threads(z.shape, axes))
    return _numpy_into(np.fft.ifftn if inverse else np.fft.fftn, z, w, axes=axes,
                       norm="forward" if inverse else "backward")


def _r2c_into(x, z, axis):
    """A call that writes into z the rfft of x along axis."""
    pocketfft = _pocketfft()
    if pocketfft is not None:
        return functools.partial(pocketfft.r2c, x, (axis,), True, 0, z,
                                 _threads(x.shape, (axis,)))
    return _numpy_into(np.fft.rfft, x, z, axis=axis)


def _c2r_into(z, x, n, axis):
    """A call that writes into x the unnormalised irfft of z to n points along axis."""
    pocketfft = _pocketfft()
    if pocketfft is not None:
        return functools.partial(pocketfft.c2r, z, (axis,), n, False, 0, x,
                                 _threads(x.shape, (axis,)))
    return _numpy_into(np.fft.irfft, z, x, n=n, axis=axis, norm="forward")


def _bins(shape, axis, n, scale, interior):
    """The parts of an rfft's bins (`shape`, bins along `axis` of a transform of n points)
    with their factors: scale on bin 0 and the Nyquist bin, scale times interior on the
    others; one region of all bins when interior is 1."""
    if interior == 1.0:
        return [((Ellipsis,), scale)]
    inner = _interior(n)
    after = (slice(None),) * (-1 - axis)
    return [((Ellipsis, slice(0, inner.start)) + after, scale),
            ((Ellipsis, inner) + after, scale * interior),
            ((Ellipsis, slice(inner.stop, shape[axis])) + after, scale)]


def _scaled_copies(sources, targets, regions):
    """The calls target = factor * source, region by region, with the views and factors (0-d
    arrays of the targets' dtype) made once, so that a call converts and allocates nothing."""
    return [functools.partial(np.multiply, source[index], np.array(factor, target.dtype),
                              target[index])
            for index, factor in regions for source, target in zip(sources, targets)]


def _copy_scaled(copies):
    for copy in copies:
        copy()


def _run(into, operands, shapes):
    """A core's impl: its `into` on the operands as arrays of one real dtype, into new
    results of `shapes`, so that a record and a replay compute alike."""
    operands = [np.asarray(a) for a in operands]
    dtype = _dtype(*operands)
    operands = [a.astype(dtype, copy=False) for a in operands]
    outs = tuple(np.empty(shape, dtype) for shape in shapes)
    into(operands, outs)()
    return outs


def _tangents(tangents):
    """The two parts' tangents, a zero part's made where the other has one; None if neither."""
    t_re, t_im = tangents
    if t_re is None and t_im is None:
        return None
    like = t_re if t_re is not None else t_im
    zero = np.zeros(shape_of(like), like.dtype)
    return (zero if t_re is None else t_re), (zero if t_im is None else t_im)


def _interior(n):
    """The bins of an rfft of n points other than bin 0 and the Nyquist bin."""
    return slice(1, (n + 1) // 2)


class _C2C:
    def bind(re, im, *, axes, inverse, scale):
        return (re, im), {"axes": axes, "inverse": inverse, "scale": scale}

    def coupled_axes(*, axes, inverse, scale):
        return tuple(axes)

    def impl(re, im, *, axes, inverse, scale):
        shape = np.broadcast_shapes(np.shape(re), np.shape(im))
        return _run(lambda args, outs: _C2C.into(args, outs, axes=axes, inverse=inverse,
                                                 scale=scale),
                    [np.broadcast_to(re, shape), np.broadcast_to(im, shape)], [shape, shape])

    def into(args, outs, *, axes, inverse, scale):
        re, im = args
        z = np.empty(outs[0].shape, _complex_dtype(outs[0].dtype))
        w = np.empty_like(z)
        transform = _c2c_into(z, w, axes, inverse)
        parts = _scaled_copies((w.real, w.imag), outs, [((Ellipsis,), scale)])

        def run():
            np.copyto(z.real, re)
            np.copyto(z.imag, im)
            transform()
            _copy_scaled(parts)
        return run

    def jvp(primals, tangents, *, axes, inverse, scale):
        out = c2c(*primals, axes=axes, inverse=inverse, scale=scale)
        t = _tangents(tangents)
        return out, (None, None) if t is None else c2c(*t, axes=axes, inverse=inverse,
                                                       scale=scale)

    def vjp(primals, cotangent, *, axes, inverse, scale):
        return c2c(*cotangent, axes=axes, inverse=not inverse, scale=scale)


class _R2C:
    def bind(x, *, axis, scale, interior):
        return (x,), {"axis": axis, "scale": scale, "interior": interior}

    def coupled_axes(*, axis, scale, interior):
        return (axis,)

    def impl(x, *, axis, scale, interior):
        shape = list(np.shape(x))
        shape[axis] = shape[axis] // 2 + 1
        return _run(lambda args, outs: _R2C.into(args, outs, axis=axis, scale=scale,
                                                 interior=interior), [x], [shape, shape])

    def into(args, outs, *, axis, scale, interior):
        (x,) = args
        z = np.empty(outs[0].shape, _complex_dtype(outs[0].dtype))
        transform = _r2c_into(x, z, axis)
        parts = _scaled_copies((z.real, z.imag), outs,
                               _bins(z.shape, axis, x.shape[axis], scale, interior))

        def run():
            transform()
            _copy_scaled(parts)
        return run

    def jvp(primals, tangents, *, axis, scale, interior):
        out = r2c(primals[0], axis=axis, scale=scale, interior=interior)
        if tangents[0] is None:
            return out, (None, None)
        return out, r2c(tangents[0], axis=axis, scale=scale, interior=interior)

    def vjp(primals, cotangent, *, axis, scale, interior):
        n = shape_of(primals[0])[axis]
        return (c2r(*cotangent, n=n, axis=axis, scale=scale, interior=interior / 2),)


class _C2R:
    def bind(re, im, *, n, axis, scale, interior):
        return (re, im), {"n": n, "axis": axis, "scale": scale, "interior": interior}

    def coupled_axes(*, n, axis, scale, interior):
        return (axis,)

    def impl(re, im, *, n, axis, scale, interior):
        shape = np.broadcast_shapes(np.shape(re), np.shape(im))
        out = list(shape)
        out[axis] = n
        return _run(lambda args, outs: _C2R.into(args, outs, n=n, axis=axis, scale=scale,
                                                 interior=interior),
                    [np.broadcast_to(re, shape), np.broadcast_to(im, shape)], [out])[0]

    def into(args, outs, *, n, axis, scale, interior):
        # scale is applied to the bins, before the (linear) transform
        (x,) = outs
        z = np.empty(args[0].shape, _complex_dtype(x.dtype))
        transform = _c2r_into(z, x, n, axis)
        parts = _scaled_copies(args, (z.real, z.imag),
                               _bins(z.shape, axis, n, scale, interior))

        def run():
            _copy_scaled(parts)
            transform()
        return run

    def jvp(primals, tangents, *, n, axis, scale, interior):
        out = c2r(*primals, n=n, axis=axis, scale=scale, interior=interior)
        t = _tangents(tangents)
        return out, None if t is None else c2r(*t, n=n, axis=axis, scale=scale,
                                               interior=interior)

    def vjp(primals, cotangent, *, n, axis, scale, interior):
        return r2c(cotangent, axis=axis, scale=scale, interior=2 * interior)


def _core(name, definition):
    entry = Primitive(name, vars(definition))
    entry.linear = True   # (no second-order terms: the tape's Hessian sparsity skips it)
    # into(operands, results, **params) -> a callable of no arguments that computes into the
    # results: the tape's replay runs the core on its own buffers (cyad/_tape/lowering.pyx)
    entry.into = definition.into
    # coupled_axes(**params): the axes it transforms along, each output depending on its own
    # transform's operand elements only (a batch's sparsity: cyad/_sparse/sparsity.py)
    entry.coupled_axes = definition.coupled_axes
    return EntryFunction(entry)


c2c = _core("c2c", _C2C)
r2c = _core("r2c", _R2C)
c2r = _core("c2r", _C2R)


# -- NumPy's functions ---------------------------------------------------------------------
# (cyad._complex imports the primitive table: its names are imported where first called)

def _real_dtype(a):
    from cyad._complex.array import real_dtype
    return real_dtype(a)


def _complex_parts(a):
    """a's real and imaginary parts (zeros for a zero part) and their dtype."""
    from cyad._complex.array import parts
    re, im = parts(a)
    dtype = _real_dtype(a)
    shape = shape_of(a)
    return ((np.zeros(shape, dtype) if re is None else re),
            (np.zeros(shape, dtype) if im is None else im), dtype)


def _complex_result(re, im, dtype):
    from cyad._complex.array import ComplexArray
    return ComplexArray(re, im, shape_of(re), dtype)


def _real_operand(a, name):
    from cyad._complex.array import is_complex
    if is_complex(a):
        raise TypeError(f"numpy.fft.{name} takes real input; it would discard the imaginary "
                        "part (take np.real of it first)")
    return a


def _resized(part, axis, n):
    """part cropped or zero-padded to n points along `axis` (NumPy's `n`, `s`)."""
    m = shape_of(part)[axis]
    if n == m:
        return part
    if n < m:
        return part[(slice(None),) * axis + (slice(0, n),)]
    widths = [(0, 0)] * len(shape_of(part))
    widths[axis] = (0, n - m)
    return np.pad(part, widths)


def _axes_and_lengths(a, s, axes, last_doubled=False):
    """NumPy's `s` and `axes` of an n-dimensional transform, as non-negative axes and lengths
    (numpy.fft's _cook_nd_args); `last_doubled`: irfftn's default length 2 (m - 1)."""
    shape = shape_of(a)
    ndim = len(shape)
    if s is None:
        axes = list(range(-ndim, 0)) if axes is None else list(axes)
        s = [shape[ax] for ax in axes]
        if last_doubled:
            s[-1] = (shape[axes[-1]] - 1) * 2
    else:
        s = list(s)
        axes = list(range(-len(s), 0)) if axes is None else list(axes)
        if len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
        if any(n is None or n == -1 for n in s):
            raise ValueError("cyad: numpy.fft's s with None or -1 entries is not supported; "
                             "give every length")
    axes = [ax + ndim if -ndim <= ax < 0 else ax for ax in axes]
    if any(not 0 <= ax < ndim for ax in axes):
        raise ValueError(f"axes {axes} out of range for an array of {ndim} dimensions")
    if len(set(axes)) != len(axes):
        raise ValueError("numpy.fft: repeated axes are not supported by cyad")
    if any(n < 1 for n in s):
        raise ValueError(f"Invalid number of FFT data points ({min(s)}) specified.")
    return axes, [int(n) for n in s]


def _no_out(out, name):
    if out is not None:
        raise TypeError(f"cyad: numpy.fft.{name} with out= is not supported on cyad's arrays; "
                        "assign its result")


def _c2c_nd(a, s, axes, norm, inverse):
    re, im, dtype = _complex_parts(a)
    axes, s = _axes_and_lengths(a, s, axes)
    for ax, n in zip(axes, s):
        re, im = _resized(re, ax, n), _resized(im, ax, n)
    ndim = len(shape_of(re))
    scale = _norm_scale(norm, math.prod(s), inverse)
    re, im = c2c(re, im, axes=tuple(ax - ndim for ax in axes), inverse=inverse, scale=scale)
    return _complex_result(re, im, dtype)


def _r2c_nd(a, s, axes, norm, name):
    x = _real_operand(a, name)
    axes, s = _axes_and_lengths(x, s, axes)
    for ax, n in zip(axes, s):
        x = _resized(x, ax, n)
    ndim = len(shape_of(x))
    scale = _norm_scale(norm, math.prod(s), False)
    re, im = r2c(x, axis=axes[-1] - ndim, scale=scale, interior=1.0)
    if len(axes) > 1:
        re, im = c2c(re, im, axes=tuple(ax - ndim for ax in axes[:-1]), inverse=False,
                     scale=1.0)
    return _complex_result(re, im, _real_dtype(x))


def _c2r_nd(a, s, axes, norm):
    re, im, dtype = _complex_parts(a)
    axes, s = _axes_and_lengths(a, s, axes, last_doubled=True)
    for ax, n in zip(axes[:-1], s[:-1]):
        re, im = _resized(re, ax, n), _resized(im, ax, n)
    re, im = _resized(re, axes[-1], s[-1] // 2 + 1), _resized(im, axes[-1], s[-1] // 2 + 1)
    ndim = len(shape_of(re))
    if len(axes) > 1:
        re, im = c2c(re, im, axes=tuple(ax - ndim for ax in axes[:-1]), inverse=True,
                     scale=1.0)
    scale = _norm_scale(norm, math.prod(s), True)
    return c2r(re, im, n=s[-1], axis=axes[-1] - ndim, scale=scale, interior=1.0)


def _one(n, axis):
    return None if n is None else (n,), (axis,)


@composition(np.fft.fft)
def _fft(a, n=None, axis=-1, norm=None, out=None):
    _no_out(out, "fft")
    return _c2c_nd(a, *_one(n, axis), norm, False)


@composition(np.fft.ifft)
def _ifft(a, n=None, axis=-1, norm=None, out=None):
    _no_out(out, "ifft")
    return _c2c_nd(a, *_one(n, axis), norm, True)


@composition(np.fft.fftn)
def _fftn(a, s=None, axes=None, norm=None, out=None):
    _no_out(out, "fftn")
    return _c2c_nd(a, s, axes, norm, False)


@composition(np.fft.ifftn)
def _ifftn(a, s=None, axes=None, norm=None, out=None):
    _no_out(out, "ifftn")
    return _c2c_nd(a, s, axes, norm, True)


@composition(np.fft.fft2)
def _fft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    _no_out(out, "fft2")
    return _c2c_nd(a, s, axes, norm, False)


@composition(np.fft.ifft2)
def _ifft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    _no_out(out, "ifft2")
    return _c2c_nd(a, s, axes, norm, True)


@composition(np.fft.rfft)
def _rfft(a, n=None, axis=-1, norm=None, out=None):
    _no_out(out, "rfft")
    return _r2c_nd(a, *_one(n, axis), norm, "rfft")


@composition(np.fft.rfftn)
def _rfftn(a, s=None, axes=None, norm=None, out=None):
    _no_out(out, "rfftn")
    return _r2c_nd(a, s, axes, norm, "rfftn")


@composition(np.fft.rfft2)
def _rfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    _no_out(out, "rfft2")
    return _r2c_nd(a, s, axes, norm, "rfft2")


@composition(np.fft.irfft)
def _irfft(a, n=None, axis=-1, norm=None, out=None):
    _no_out(out, "irfft")
    return _c2r_nd(a, *_one(n, axis), norm)


@composition(np.fft.irfftn)
def _irfftn(a, s=None, axes=None, norm=None, out=None):
    _no_out(out, "irfftn")
    return _c2r_nd(a, s, axes, norm)


@composition(np.fft.irfft2)
def _irfft2(a, s=None, axes=(-2, -1), norm=None, out=None):
    _no_out(out, "irfft2")
    return _c2r_nd(a, s, axes, norm)


_SWAPPED = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _swapped(norm):
    if norm not in _SWAPPED:
        _norm_scale(norm, 1, False)   # (NumPy's error)
    return _SWAPPED[norm]


@composition(np.fft.hfft)
def _hfft(a, n=None, axis=-1, norm=None, out=None):
    """The FFT of a signal with Hermitian symmetry (NumPy: irfft of conj(a), norm swapped)."""
    _no_out(out, "hfft")
    return _c2r_nd(np.conjugate(a), *_one(n, axis), _swapped(norm))


@composition(np.fft.ihfft)
def _ihfft(a, n=None, axis=-1, norm=None, out=None):
    _no_out(out, "ihfft")
    return np.conjugate(_r2c_nd(a, *_one(n, axis), _swapped(norm), "ihfft"))


def _shifts(x, axes, sign):
    shape = shape_of(x)
    axes = tuple(range(len(shape))) if axes is None else \
        (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    return [sign * (shape[ax] // 2) for ax in axes], axes


@composition(np.fft.fftshift)
def _fftshift(x, axes=None):
    return np.roll(x, *_shifts(x, axes, 1))


@composition(np.fft.ifftshift)
def _ifftshift(x, axes=None):
    return np.roll(x, *_shifts(x, axes, -1))

"""The operators on complex x or on an f with complex values, by JAX's conventions.

Design. The engines differentiate real functions. A call whose x is complex, or whose f returns
complex values, is answered by the same operators on the realified problem: x as its real and
imaginary parts along a last axis of two (a view of a complex ndarray's own storage), f's
complex values likewise (`_Realified`), and each result read back as JAX defines it:

- pushforward: the real-linear JVP, a complex tangent in, a complex tangent out (jax.jvp);
- pullback: jax.vjp's, the cotangent and the result conjugated around the real pullback, so
  that a holomorphic f pulls ct back to ct * f'(z);
- gradient of a real f of complex x: jax.grad's df/dx - i df/dy (the conjugate of the real
  gradient read as complex numbers); with holomorphic=True, f'(z) (the pullback of 1);
- jacobian: jax.jacfwd's complex columns for real x, jax.jacrev's conjugated gradient rows
  for a real f of complex x, and with holomorphic=True df_i/dz_j;
- derivative and second_derivative of complex values of a real x; with holomorphic=True,
  f'(z) and f''(z);
- hvp: jax.jvp of jax.grad; hessian: jax.hessian's, for a holomorphic f only.

Where JAX refuses (a gradient of complex values, a Jacobian of a map C -> C that is not
declared holomorphic) cyad refuses with the same advice. A holomorphic f's derivatives are
those along the real axes: f' = u_x - i u_y of u = Re f, so that holomorphic second-order
operators differentiate Re f alone (`_Realified`'s "real part" form).

A prep of such a call (`ComplexPrep`) holds the prep of the realified problem; f is evaluated
once on plain values when it is made, to tell its values' kind and shape.
"""
import threading

import numpy as np

from cyad import _operators as _ops
from cyad._complex.array import ComplexArray, is_complex, parts
from cyad._core import _BUSY
from cyad._primitives._table import is_engine_array

WITH_VALUE, WITH_FIRST = 1, 2      # as cyad/_core.pxd's

_COMPLEX = {np.dtype(np.float64): np.dtype(np.complex128),
            np.dtype(np.float32): np.dtype(np.complex64)}

_WITH_TANGENTS = ("pushforward", "pullback", "hvp")
_SCALAR_X = ("derivative", "second_derivative")
_SCALAR_VALUES = ("gradient", "hvp", "hessian")


def _array_if_listed(x):
    # a list or tuple of numbers as the array NumPy makes of it
    return np.asarray(x) if type(x) in (list, tuple) else x


def _parts_dtype(x):
    """The real dtype of x's parts (of x itself when real), as cyad's real inputs are kept."""
    if isinstance(x, ComplexArray):
        return x.real_dtype
    dtype = np.asarray(x).dtype if not hasattr(x, "dtype") else np.dtype(x.dtype)
    if dtype.kind == "c":
        if dtype not in (np.complex64, np.complex128):
            raise TypeError(f"cyad: cannot differentiate with respect to an input of dtype "
                            f"{dtype}; use complex128 or complex64")
        return np.finfo(dtype).dtype
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)


def realified(a, dtype):
    """A complex operand as its parts along a last axis of two, in the real dtype `dtype`: a
    view of a complex ndarray's storage, a stack of an engine's parts."""
    if isinstance(a, ComplexArray):
        re, im = a.re, a.im
        zero = np.zeros(a.shape, dtype)
        return np.stack([zero if re is None else re, zero if im is None else im], axis=-1)
    if is_engine_array(a):        # a real array of an engine: its imaginary part is zero
        return np.stack([a, np.zeros(np.shape(a), dtype)], axis=-1)
    a = np.asarray(a, _COMPLEX[dtype])
    if not a.flags.c_contiguous:
        a = a.copy()
    return a.reshape((1,) + a.shape).view(dtype).reshape(a.shape + (2,))


def complexified(r, conjugate=False):
    """The complex array whose parts lie along r's last axis (conjugated if asked): a view of
    a real ndarray's storage, a ComplexArray of an engine's parts."""
    if is_engine_array(r):
        re, im = r[..., 0], r[..., 1]
        return ComplexArray(re, -im if conjugate else im, np.shape(r)[:-1], r.dtype)
    r = np.ascontiguousarray(r)
    if conjugate:
        np.negative(r[..., 1], out=r[..., 1])
    return r.view(_COMPLEX[r.dtype])[..., 0]


def _stacked(r, dtype, real_part):
    # f's complex values as the realified problem's: both parts, or the real part alone
    re, im = parts(r)
    shape = np.shape(r)
    if re is None:
        re = np.zeros(shape, dtype)
    if real_part:
        return re
    return np.stack([re, np.zeros(shape, dtype) if im is None else im], axis=-1)


class _Realified:
    """f on real arguments: x's parts along a last axis (if x is complex), f's complex values
    as both parts along a last axis ("parts") or as their real part ("real part")."""

    def __init__(self, f, x_complex, values, dtype):
        self.f, self.x_complex, self.values, self.dtype = f, x_complex, values, dtype

    def _input(self, xr):
        if not self.x_complex:
            return xr
        if is_engine_array(xr):
            return ComplexArray(xr[..., 0], xr[..., 1], np.shape(xr)[:-1], self.dtype)
        return complexified(np.array(xr))

    def __call__(self, *args):
        if len(args) == 2:          # f(y, x): y's parts along a last axis if complex
            y = args[0]
            if self.values is not None:
                y = ComplexArray(y[..., 0], y[..., 1], np.shape(y)[:-1], self.dtype)
                y._owned.update(("re", "im"))     # written in place: they are y's
            return self.f(y, self._input(args[1]))
        r = self.f(self._input(args[0]))
        if is_complex(r):
            if self.values is None:
                raise TypeError("cyad: f returned complex values where it returned real "
                                "values before")
            return _stacked(r, self.dtype, self.values == "real part")
        if self.values is not None:
            raise TypeError("cyad: f returned real values where it returned complex values "
                            "before")
        return r


def _refuse(family, why):
    return TypeError(f"cyad: {family} {why}")


class ComplexPrep:
    """Prepared state of one operator family for complex x or an f with complex values: the
    prep of the realified problem, and how its results read back (module docstring).

    Made by the `prepare_*` functions when x is complex (or f's values are), passed back
    with ``prep=`` like any prep.
    """

    __slots__ = ("family", "holomorphic", "x_complex", "values_complex", "x_shape", "dtype",
                 "out_shape", "two_argument", "inner_family", "function", "inner", "seed",
                 "direct", "_views", "_kept", "_busy")

    def __init__(self, family, f, x, v, y, chunk, engine, workers, holomorphic, one_shot=False):
        self.family, self.holomorphic = family, bool(holomorphic)
        x = _array_if_listed(x)
        self.x_complex = is_complex(x)
        self.dtype = _parts_dtype(x)
        self.x_shape = np.shape(x)
        self.two_argument = y is not None
        if self.two_argument:
            self.values_complex, self.out_shape = is_complex(y), np.shape(y)
        else:
            probe = f(x if self.x_complex or is_engine_array(x) else np.asarray(x, self.dtype))
            self.values_complex, self.out_shape = is_complex(probe), np.shape(probe)
        values = self._plan()
        self.function = _Realified(f, self.x_complex, values, self.dtype)
        self.direct = self._direct_result()
        self._views = {}
        self._kept = None
        self._busy = threading.Lock()
        if one_shot:
            self.inner = None
            return
        xr = self.realified_x(x)
        self.inner = _ops.PREPARE[self.inner_family](
            self.function, xr, *self._seeds(v, xr), y=self._y(y), chunk=chunk, engine=engine,
            **({} if self.inner_family in _SCALAR_X else {"workers": workers}))

    def _plan(self):
        # the realified problem's family and seed; the values of f it differentiates
        # (`_Realified`'s form; module docstring)
        family, xc, fc, h = self.family, self.x_complex, self.values_complex, self.holomorphic
        self.inner_family, self.seed = family, None
        if h:
            if not xc:
                raise _refuse(family, "with holomorphic=True takes a complex x")
            if not fc:
                raise _refuse(family, "with holomorphic=True takes an f of complex values")
            if family in _SCALAR_VALUES and self.out_shape != ():
                raise ValueError(f"cyad: {family} takes a scalar-valued f, and f's output has "
                                 f"shape {self.out_shape}")
            if family == "gradient":      # f'(z): the pullback of 1
                self.inner_family, self.seed = "pullback", 1.0
            elif family == "derivative":  # f'(z): the pushforward of 1
                self.inner_family, self.seed = "pushforward", 1.0
            elif family == "second_derivative":
                self.inner_family = "hessian"
                return "real part"
            elif family in ("hvp", "hessian"):
                return "real part"
            return "parts"
        if fc and family in _SCALAR_VALUES:
            raise _refuse(family, "takes a real-valued f, and f returns complex values (as "
                                  "jax.grad): differentiate their real part, imaginary part "
                                  "or abs, or pass holomorphic=True for a holomorphic f of "
                                  "complex x")
        if xc and family == "hessian":
            raise _refuse(family, "of a function of complex x is defined for a holomorphic f "
                                  "(holomorphic=True), as jax.hessian's; for a real f, take "
                                  "hvp (jax.jvp of jax.grad)")
        if xc and fc and family in ("jacobian", "derivative", "second_derivative"):
            raise _refuse(family, "of complex values of complex x is defined for a "
                                  "holomorphic f (holomorphic=True), as jax.jacfwd's; "
                                  "pushforward and pullback give the real-linear maps of any f")
        if xc and family in _SCALAR_X:
            raise _refuse(family, "of a real function of complex x is not defined (as "
                                  "jax.jacfwd's): take gradient, or holomorphic=True")
        return "parts" if fc else None

    def _direct_result(self):
        # how the inner result is the family's, read in place: "same", "values" (a view
        # of its parts as complex numbers), "conjugate" (the same, imaginary parts negated),
        # or None (read by `_main`)
        family, xc, fc = self.family, self.x_complex, self.values_complex
        if family in ("pushforward", "derivative"):
            return "values" if fc else "same"
        if family in ("pullback", "gradient", "hvp"):
            return "conjugate" if xc else "same"
        return None

    # -- the realified arguments -----------------------------------------------------------

    def _view(self, role, a):
        # the realified view of a complex ndarray: kept while calls pass the same array (a
        # view of its storage stays one)
        kept = self._views.get(role)
        if kept is not None and kept[0] is a:
            return kept[1]
        r = realified(a, self.dtype)
        if isinstance(a, np.ndarray) and np.shares_memory(a, r):
            self._views[role] = (a, r)
        return r

    def _y(self, y):
        # the inner problem's y: a complex y's parts (a view of its storage, which gets f's
        # values)
        if y is None or not self.values_complex:
            if y is not None and is_complex(y):
                raise ValueError("cyad: the prep was made for a real y, and y is complex")
            return y
        if not (isinstance(y, np.ndarray) and is_complex(y) and y.flags.c_contiguous
                and y.dtype == _COMPLEX[self.dtype]):
            raise ValueError(f"cyad: y must be a C-contiguous ndarray of dtype "
                             f"{_COMPLEX[self.dtype]}")
        return self._view("y", y)

    def realified_x(self, x):
        if self.x_complex:
            if not is_complex(x):
                raise ValueError("cyad: the prep was made for complex x, and x is real")
            return self._view("x", x)
        if is_complex(x):
            raise ValueError("cyad: the prep was made for real x, and x is complex")
        return x

    def _seeds(self, v, xr):
        # the realified tangents, cotangents or fixed seed of the inner call, as a list of
        # positional arguments
        if self.seed is not None:
            if self.inner_family == "pullback":     # the cotangent 1 (its imaginary part 0)
                seed = np.zeros((2,), self.dtype)
                seed[0] = 1.0
            else:                                    # the tangent 1 along x's real axis
                seed = np.zeros(np.shape(xr), self.dtype)
                seed[..., 0] = 1.0
            return [seed]
        if self.family not in _WITH_TANGENTS:
            return []
        if isinstance(v, tuple):
            return [tuple(self._seed(t) for t in v)]
        if self.family != "pullback" and self.x_complex and isinstance(v, np.ndarray):
            return [self._view("tangent", v)]
        return [self._seed(v)]

    def _seed(self, t):
        if self.family == "pullback":       # a cotangent of f's values
            if self.values_complex:         # conjugated (module docstring)
                t = realified(t, self.dtype)
                return np.stack([t[..., 0], -t[..., 1]], axis=-1)
            if is_complex(t):
                raise ValueError("cyad: a cotangent of real values must be real")
            return t
        if self.x_complex:
            return realified(t, self.dtype)
        if is_complex(t):
            raise ValueError("cyad: a tangent of real x must be real")
        return t

    # -- the call ---------------------------------------------------------------------------

    def call(self, family, holomorphic, wanted, f, x, v, y, out, chunk, engine, workers):
        """An operator's call (module docstring) on this prep."""
        if family != self.family:
            raise ValueError(f"cyad: the prep was made for {self.family}, not {family}")
        if holomorphic != self.holomorphic:
            raise ValueError(f"cyad: holomorphic={bool(holomorphic)} differs from the prep's "
                             f"{self.holomorphic}")
        if not self._busy.acquire(blocking=False):
            raise RuntimeError(_BUSY)
        try:
            return self._call(wanted, f, x, v, y, out, chunk, engine, workers)
        finally:
            self._busy.release()

    def _call(self, wanted, f, x, v, y, out, chunk, engine, workers):
        self._kept = None
        x = _array_if_listed(x)
        if (y is not None) != self.two_argument:
            raise ValueError("cyad: the prep was made for another form of f (f(x) or f(y, x))")
        self.function.f = f
        xr = self.realified_x(x)
        if np.shape(x) != self.x_shape:
            raise ValueError(f"cyad: x has shape {np.shape(x)}, but the prep was made for "
                             f"shape {self.x_shape}")
        inner_wanted = wanted
        if self.inner_family in ("pullback", "pushforward") and self.family not in \
                _WITH_TANGENTS:
            inner_wanted = wanted & WITH_VALUE
        elif self.inner_family == "hessian" and self.family == "second_derivative":
            inner_wanted = WITH_VALUE | WITH_FIRST if wanted else 0
        operator = _ops.OPERATORS[self.inner_family][inner_wanted]
        keywords = {"y": self._y(y), "prep": self.inner}
        if self.inner is None:
            keywords.update(chunk=chunk, engine=engine)
            if self.inner_family not in _SCALAR_X:
                keywords["workers"] = workers
        seeds = self._seeds(v, xr)
        if not wanted and self._in_place(out):
            # the result written into a view of out itself
            outr = self._view("out", out) if self.direct != "same" else out
            operator(self.function, xr, *seeds, out=outr, **keywords)
            imaginary = outr[..., 1] if self.direct == "conjugate" else None
            if imaginary is not None:
                np.negative(imaginary, out=imaginary)
            if self.inner is not None and y is None and self._views_of(x, xr, v, seeds):
                # what a call with the same arrays repeats (cyad/_operators.pyx, _repeated)
                self._kept = (x, v, out, f, self.family, self.holomorphic, self.inner, xr,
                              seeds[0] if seeds else None, outr, imaginary)
            return out
        return self._results(wanted, operator(self.function, xr, *seeds, **keywords), x, y, out)

    def _views_of(self, x, xr, v, seeds):
        # whether the realified x and seeds are x, v, views of them or fixed: what a call
        # with the same arrays (new values in them) would make again
        if not (xr is x or (type(x) is np.ndarray and np.shares_memory(x, xr))):
            return False
        return self.seed is not None or all(
            s is v or (type(v) is np.ndarray and np.shares_memory(v, s)) for s in seeds)

    def _in_place(self, out):
        # whether the inner call can write its result into out (a view of it)
        if self.direct is None or type(out) is not np.ndarray or not out.flags.c_contiguous:
            return False
        shape = self.out_shape if self.family in ("pushforward", "derivative") else self.x_shape
        dtype = self.dtype if self.direct == "same" else _COMPLEX[self.dtype]
        return out.shape == shape and out.dtype == dtype

    def _results(self, wanted, r, x, y, out):
        # the inner results read back as the family's, written into out= if given
        if not wanted:
            return _returned(self._main(r), out)
        results = list(r)
        names = [n for n, bit in (("value", WITH_VALUE), ("first", WITH_FIRST)) if wanted & bit]
        for i, name in enumerate(names):
            if name == "value":      # (in the form f(y, x), y itself)
                results[i] = y if y is not None else self._value(r[i], x)
            else:
                results[i] = self._first(r[i])
        results[-1] = self._main(r[-1])
        if out is None:
            return tuple(_returned(a, None) for a in results)
        if not isinstance(out, tuple) or len(out) != len(results):
            raise ValueError(f"cyad: out= takes a tuple of {len(results)} buffers here")
        return tuple(_returned(a, o) for a, o in zip(results, out))

    def _value(self, r, x):
        if self.function.values == "real part":     # the inner problem's is Re f
            return np.asarray(self.function.f(x))
        return complexified(r) if self.values_complex else r

    def _first(self, r):
        # a second-order family's first-order result: a derivative of complex values of a
        # real x, else jax.grad's gradient (f' under holomorphic=True)
        if self.x_complex:
            return complexified(r, conjugate=True)
        return complexified(r) if self.values_complex else r

    def _main(self, r):
        if isinstance(r, tuple):
            return tuple(self._main(a) for a in r)
        family, xc, fc = self.family, self.x_complex, self.values_complex
        if family in ("pushforward", "derivative"):
            return complexified(r) if fc else r
        if family in ("pullback", "gradient", "hvp"):
            return complexified(r, conjugate=True) if xc else r
        if family == "second_derivative":
            if xc:      # f'' = u_xx - i u_yx of the Hessian of u = Re f at (x, y)
                return complexified(_take(r, -1, 0), conjugate=True)
            return complexified(r)
        if family == "hessian":     # holomorphic: u_xx - i u_yx, entry by entry
            n = len(self.x_shape)
            return complexified(_moved(_take(r, -1, 0), n), conjugate=True)
        # a Jacobian: its (real, imaginary) axes of values and of x, as JAX reads them
        m = len(self.out_shape)
        if xc and fc:           # holomorphic: the derivatives along x's real axes
            return complexified(_moved(_take(r, -1, 0), m))
        if xc:
            return complexified(r, conjugate=True)
        return complexified(_moved(r, m))


def _take(r, axis, index):
    return r[(Ellipsis, index)] if axis == -1 else np.take(r, index, axis)


def _moved(r, axis):
    return np.moveaxis(r, axis, -1)


def _returned(result, out):
    # the result (a 0-d one as a Python number), or out= written with it
    if isinstance(result, tuple):
        if out is not None and (not isinstance(out, tuple) or len(out) != len(result)):
            raise ValueError(f"cyad: out= takes a tuple of {len(result)} buffers here")
        return tuple(_returned(a, None if out is None else o)
                     for a, o in zip(result, out or result))
    if out is None:
        if isinstance(result, np.ndarray) and result.ndim == 0:
            return result.item()
        return result
    if is_engine_array(result) or isinstance(result, ComplexArray):
        raise ValueError("cyad: out= is not taken inside another differentiation")
    result = np.asarray(result)
    if not isinstance(out, np.ndarray) or out.shape != result.shape or \
            out.dtype != result.dtype:
        raise ValueError(f"cyad: out must be an ndarray of shape {result.shape} and dtype "
                         f"{result.dtype}")
    out[...] = result
    return out


def call(family, wanted, f, x, v, y, out, chunk, engine, workers, holomorphic):
    """An unprepared operator's call with complex x or an f of complex values, or with
    holomorphic=True."""
    x = _array_if_listed(x)
    prep = ComplexPrep(family, f, x, v, y, chunk, engine, workers, holomorphic, one_shot=True)
    return prep.call(family, prep.holomorphic, wanted, f, x, v, y, out, chunk, engine, workers)


def prepare(family, f, x, v, y, chunk, engine, workers, holomorphic):
    """A prep of calls with complex x or an f of complex values."""
    return ComplexPrep(family, f, x, v, y, chunk, engine, workers, holomorphic)

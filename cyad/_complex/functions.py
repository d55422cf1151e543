"""NumPy's functions of complex arrays, from the primitive table.

- A linear entry (reshape, indexing, sums, concatenation, ...) has real coefficients, so it
  maps a complex array part by part: f(a + ib) = f(a) + i f(b). It runs on each part as the
  same entry (`part_function`), and an engine records it as it records the real call.
- A product (matmul, einsum, tensordot) is linear in each operand: it expands into the
  products of the parts, i^k for k imaginary parts taken (four real products for two operands).
- A composition runs as it is where its operations mean the same for complex numbers (the
  functions of ``PART_BY_PART``: placements, products, sums, the Fourier transforms); one that
  conjugates for complex operands (vdot, vecdot, vecmat, correlate) or that orders, compares
  or squares elements (sort, max, var, norm, linalg's factorisations) has a definition here or
  is refused, never run as if its operands were real.
"""
import itertools
import math

import numpy as np

from cyad._hints import function_name
from cyad._complex.array import ComplexArray, from_values, parts, real_dtype
from cyad._complex.ufuncs import angle
from cyad._primitives._table import TABLE, numpy_function, shape_of
from cyad._primitives.custom import EntryFunction

SPECIAL: dict = {}

# the compositions whose NumPy operations give the complex result on complex operands
PART_BY_PART = {numpy_function(name) for name in (
    "append", "array_split", "atleast_1d", "atleast_2d", "block",
    "broadcast_arrays", "column_stack", "convolve", "cross", "cumulative_sum", "delete",
    "diagflat", "diagonal", "dot", "dsplit", "dstack", "expand_dims", "fliplr", "flipud",
    "gradient", "hsplit", "hstack", "inner", "insert", "kron", "linalg.cross",
    "linalg.matmul", "linalg.matrix_transpose", "linalg.multi_dot",
    "linalg.outer", "linalg.tensordot", "linalg.trace", "matrix_transpose", "matvec", "mean",
    "moveaxis", "outer", "pad", "polyval", "ravel", "repeat", "roll", "rot90", "split",
    "squeeze", "swapaxes", "tile", "trapezoid", "tril", "triu", "vsplit", "vstack",
    "fft.fft", "fft.ifft", "fft.fft2", "fft.ifft2", "fft.fftn", "fft.ifftn", "fft.rfft",
    "fft.irfft", "fft.rfft2", "fft.irfft2", "fft.rfftn", "fft.irfftn", "fft.hfft",
    "fft.ihfft", "fft.fftshift", "fft.ifftshift",
)} - {None}

# the primitives linear in each operand
MULTILINEAR = ("matmul", "einsum", "tensordot")


def _special(*names):
    def register(definition):
        for name in names:
            function = numpy_function(name)
            if function is not None:
                SPECIAL[function] = definition
        return definition
    return register


def _identity_bind(*operands, **params):
    return operands, params


_PART_FUNCTIONS: dict = {}


def part_function(entry):
    """The function that runs `entry` on operands and parameters as `entry.bind` gives them:
    a linear or primitive entry of the table on the parts of complex arrays (made once per
    entry: an engine keeps what it builds for it on the function's own entry)."""
    function = _PART_FUNCTIONS.get(entry)
    if function is None:
        function = _PART_FUNCTIONS[entry] = EntryFunction(entry, bind=_identity_bind)
    return function


def supports(function):
    """Whether NumPy's `function` (a ufunc or another function) takes complex arrays."""
    from cyad._complex.ufuncs import UFUNCS
    if function in UFUNCS or function in SPECIAL or function in PART_BY_PART:
        return True
    entry = TABLE.get(function)
    return entry is not None and (entry.kind == "linear" or (
        entry.kind == "primitive" and entry.name in MULTILINEAR))


def function_call(func, args, kwargs):
    """A NumPy function with a complex operand."""
    special = SPECIAL.get(func)
    if special is not None:
        return special(*args, **kwargs)
    entry = TABLE.get(func)
    if entry is not None and entry.kind == "linear":
        return _linear(entry, args, kwargs)
    if entry is not None and entry.kind == "primitive" and entry.name in MULTILINEAR:
        return _multilinear(entry, args, kwargs)
    if func in PART_BY_PART:
        return entry.impl(*args, **kwargs)
    raise TypeError(f"cyad: {function_name(func)} of complex arrays is not supported (cyad "
                    "differentiates complex code through NumPy's arithmetic, elementwise "
                    "functions, products, linear and structural functions, numpy.fft and "
                    "numpy.linalg's solvers and decompositions)")


def _linear(entry, args, kwargs):
    operands, params = entry.bind(*args, **kwargs)
    split = [parts(x) for x in operands]
    dtype = real_dtype(*operands)
    run = part_function(entry)

    def part(i):
        chosen = [p[i] for p in split]
        if all(c is None for c in chosen):
            return None
        return run(*[np.zeros(shape_of(x), dtype) if c is None else c
                     for c, x in zip(chosen, operands, strict=True)], **params)

    re, im = part(0), part(1)
    if re is None and im is None:
        re = run(*[np.zeros(shape_of(x), dtype) for x in operands], **params)
    return _result(re, im, dtype)


def _multilinear(entry, args, kwargs):
    """Σ over the choices of a part per operand of i^k times the product of the chosen parts
    (k: the imaginary parts chosen)."""
    operands, params = entry.bind(*args, **kwargs)
    split = [parts(x) for x in operands]
    dtype = real_dtype(*operands)
    run = part_function(entry)
    sums = [None, None]   # the real and imaginary parts
    for choice in itertools.product((0, 1), repeat=len(operands)):
        chosen = [p[c] for p, c in zip(split, choice)]
        if any(c is None for c in chosen):
            continue
        term = run(*chosen, **params)
        k = sum(choice) % 4
        target, sign = (0, 1) if k == 0 else (1, 1) if k == 1 else (0, -1) if k == 2 else (1, -1)
        if sums[target] is None:
            sums[target] = term if sign > 0 else -term
        else:
            sums[target] = sums[target] + term if sign > 0 else sums[target] - term
    if sums[0] is None and sums[1] is None:
        sums[0] = run(*[np.zeros(shape_of(x), dtype) for x in operands], **params)
    return _result(sums[0], sums[1], dtype)


def _result(re, im, dtype):
    shape = shape_of(re if re is not None else im)
    return ComplexArray(re, im, shape, dtype)


# -- the functions that treat the parts apart ----------------------------------------------------

def _complex_array(z):
    if isinstance(z, ComplexArray):
        return z
    re, im = parts(z)
    return ComplexArray(re, im, shape_of(z), real_dtype(z))


@_special("real")
def _real(val):
    return _complex_array(val).real


@_special("imag")
def _imag(val):
    return _complex_array(val).imag


@_special("angle")
def _angle(z, deg=False):
    z = _complex_array(z)
    result = angle(z.re, z.im, z)
    return result * (180.0 / math.pi) if deg else result


@_special("iscomplexobj")
def _iscomplexobj(x):
    return True


@_special("isrealobj")
def _isrealobj(x):
    return False


@_special("iscomplex")
def _iscomplex(x):
    return np.not_equal(_complex_array(x).imag, 0)


@_special("isreal")
def _isreal(x):
    return np.equal(_complex_array(x).imag, 0)


@_special("real_if_close")
def _real_if_close(a, tol=100):
    """The real part where every imaginary part is within tol machine epsilons of 0 (read
    off the values, as NumPy does: a recording checks it on every replay)."""
    z = _complex_array(a)
    if z.im is None:
        return z.real
    eps = np.finfo(z.real_dtype).eps
    if bool(np.all(np.abs(z.im) < (tol * eps if tol > 1 else tol))):
        return z.real
    return z


@_special("shape")
def _shape(a):
    return a.shape


@_special("ndim")
def _ndim(a):
    return a.ndim


@_special("size")
def _size(a, axis=None):
    return a.size if axis is None else a.shape[axis]


def _made(make, a, dtype, shape):
    """np.zeros_like & co of a complex array: complex, of constant parts; real, a constant."""
    values = make(np.empty(a.shape if shape is None else shape,
                           a.dtype if dtype is None else dtype))
    return from_values(values) if values.dtype.kind == "c" else values


@_special("zeros_like")
def _zeros_like(a, dtype=None, order="K", subok=True, shape=None):
    return _made(np.zeros_like, a, dtype, shape)


@_special("ones_like")
def _ones_like(a, dtype=None, order="K", subok=True, shape=None):
    return _made(np.ones_like, a, dtype, shape)


@_special("empty_like")
def _empty_like(prototype, dtype=None, order="K", subok=True, shape=None):
    return _made(np.zeros_like, prototype, dtype, shape)


@_special("full_like")
def _full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None):
    """a's shape (or `shape`) filled with fill_value, a number or an array of an engine."""
    dtype = np.dtype(getattr(a, "dtype", None) if dtype is None else dtype)
    if dtype.kind != "c":
        raise TypeError(f"cyad: numpy.full_like with dtype {dtype} would discard the "
                        "imaginary part of its fill value; take np.real of it")
    shape = shape_of(a) if shape is None else np.broadcast_shapes(shape)
    re, im = parts(fill_value)
    return ComplexArray(re, im, shape, np.finfo(dtype).dtype)


@_special("where")
def _where(condition, x=None, y=None):
    """Part by part, so that an engine selects by a condition it computes (a tape's mask is
    recomputed on every replay)."""
    if x is None and y is None:
        return np.nonzero(condition)
    (a, b), (c, d) = parts(x), parts(y)

    def part(p, q):
        if p is None and q is None:
            return None
        return np.where(condition, 0.0 if p is None else p, 0.0 if q is None else q)

    shape = np.broadcast_shapes(shape_of(condition), shape_of(x), shape_of(y))
    return ComplexArray(part(a, c), part(b, d), shape, real_dtype(x, y))


@_special("vdot")
def _vdot(a, b, /):
    """Σ conj(a) b over the flattened arrays."""
    return np.dot(np.ravel(np.conjugate(a)), np.ravel(b))


@_special("vecdot", "linalg.vecdot")
def _vecdot(x1, x2, /, *, axis=-1):
    return np.sum(np.conjugate(x1) * x2, axis=axis)


@_special("vecmat")
def _vecmat(x1, x2, /):
    return np.matmul(np.expand_dims(np.conjugate(x1), -2), x2)[..., 0, :]


@_special("correlate")
def _correlate(a, v, mode="valid"):
    """Σ_n a[n + k] conj(v[n]), NumPy's correlation of complex sequences."""
    return TABLE[np.correlate].impl(a, np.conjugate(v), mode)


# numpy.linalg of complex matrices: its functions register in SPECIAL
from cyad._complex import linalg  # noqa: E402, F401

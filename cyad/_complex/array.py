"""`ComplexArray`: a complex array of f's computation as its real and imaginary parts.

A part is a real array of an engine (a dual array, a tracer), a plain ndarray (a constant), or
None for a part that is zero (``1j * theta`` has no real part): the rules skip what a zero
part would contribute, so that an engine records no operation on it. Parts have the array's
whole shape (a smaller constant is broadcast when the array is made).

Writing into a complex array (``z[k] = v``, ``z *= w``, ``out=``) writes into its parts, after
making each its own (a part another array holds, such as x in ``x + 1j``, is copied first, as
NumPy's results are new arrays). A view (``z[1:]``, a basic index) reads its parts off the
array it views whenever it reads them, so that its writes reach that array, also where the
write made one of its parts.
"""
import numpy as np

from cyad import _hints
from cyad._array_methods import ArrayMethods
from cyad._primitives._table import is_engine_array, shape_of


def is_complex(x):
    """Whether x is complex: a ComplexArray, a complex ndarray or NumPy scalar, or a Python
    complex number."""
    return (isinstance(x, (ComplexArray, complex))
            or (isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind == "c"))


def is_complex_among(args, kwargs=None):
    """Whether a NumPy function's arguments hold a complex operand (also inside a list or
    tuple argument, as np.concatenate's)."""
    for values in (args, () if kwargs is None else kwargs.values()):
        for x in values:
            if type(x) in (list, tuple):
                if any(is_complex(y) for y in x):
                    return True
            elif is_complex(x):
                return True
    return False


def parts(x):
    """(real part, imaginary part) of an operand, None for a part that is zero."""
    if isinstance(x, ComplexArray):
        return x.re, x.im
    if isinstance(x, complex):
        return (x.real if x.real else None), (x.imag if x.imag else None)
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind == "c":
        return ((x.real if np.any(x.real) else None), (x.imag if np.any(x.imag) else None))
    return x, None


def real_dtype(*operands):
    """The real dtype of the parts of a result of `operands`, float64 or float32, by NumPy's
    promotion (Python numbers are weak: they take the arrays' precision)."""
    dtypes = []
    for x in operands:
        if isinstance(x, ComplexArray):
            dtypes.append(x.real_dtype)
        elif hasattr(x, "dtype") and not isinstance(x, (int, float, complex)):
            dtype = np.dtype(x.dtype)
            dtypes.append(np.finfo(dtype).dtype if dtype.kind == "c" else dtype)
    dtype = np.result_type(np.float32, *dtypes) if dtypes else np.dtype(np.float64)
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)


def broadcast_shape(*operands):
    return np.broadcast_shapes(*[shape_of(x) for x in operands])


def from_values(values):
    """A complex ndarray made by an engine's np.zeros_like & co, as a complex array of constant
    parts (None where zero): writing an engine's values into it makes the part the engine's."""
    re, im = parts(values)
    return ComplexArray(re, im, values.shape, np.finfo(values.dtype).dtype)


def cast(x, dtype):
    """x.astype(dtype) of a real engine array x to a complex dtype: its real part."""
    part = np.finfo(dtype).dtype
    return ComplexArray(x.astype(part), None, shape_of(x), part)


def _basic(key):
    """Whether NumPy gives a view for this index (ints, slices, Ellipsis, None)."""
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, slice) or (
        isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))) for k in keys)


def _constant_part(p, shape, dtype):
    p = np.asarray(p, dtype)
    return p if p.shape == shape else np.broadcast_to(p, shape)


class ComplexArray(ArrayMethods):
    """A complex array whose real and imaginary parts are real arrays of an engine (its
    operators and ndarray methods: ArrayMethods, as the engines' arrays have them)."""

    described_as = "complex arrays"

    __slots__ = ("_re", "_im", "shape", "real_dtype", "_base", "_key", "_owned")
    __array_priority__ = 2000    # above the engines' arrays: the complex operation is ours
    __cyad_complex__ = True      # (what an engine asks of an operand's type)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, re, im, shape, dtype):
        shape, dtype = tuple(shape), np.dtype(dtype)
        self.shape, self.real_dtype = shape, dtype
        self._re = self._part(re)
        self._im = self._part(im)
        self._base = self._key = None
        # the parts this array made itself: any other (an operand's part, a broadcast, a
        # caller's constant) is copied before its first write, as NumPy's results are new
        self._owned = set()

    def _part(self, p):
        if p is None:
            return None
        if not is_engine_array(p):
            return _constant_part(p, self.shape, self.real_dtype)
        if p.shape != self.shape:
            p = np.broadcast_to(p, self.shape)
        if p.dtype != self.real_dtype:
            p = p.astype(self.real_dtype)
        return p

    @classmethod
    def _view(cls, base, key, shape):
        """base[key] of a basic index: its parts are base's, indexed when read, so that it
        reads and writes what base holds, also after a write makes one of base's parts."""
        view = cls.__new__(cls)
        view.shape, view.real_dtype = shape, base.real_dtype
        view._re = view._im = None
        view._base, view._key, view._owned = base, key, set()
        return view

    @property
    def re(self):
        return self._read("re")

    @property
    def im(self):
        return self._read("im")

    def _read(self, name):
        if self._base is None:
            return getattr(self, "_" + name)
        part = self._base._read(name)
        return None if part is None else part[self._key]

    # -- attributes ----------------------------------------------------------------------------
    @property
    def dtype(self):
        return np.dtype(np.complex64 if self.real_dtype == np.float32 else np.complex128)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def _zeros(self):
        return np.zeros(self.shape, self.real_dtype)

    @property
    def real(self):
        return self._own("re")

    @real.setter
    def real(self, value):
        self._write("re", Ellipsis, value)

    @property
    def imag(self):
        return self._own("im")

    @imag.setter
    def imag(self, value):
        self._write("im", Ellipsis, value)

    def __repr__(self):
        return f"<cyad complex array of shape {self.shape}, {self.dtype}>"

    # -- indexing ------------------------------------------------------------------------------
    def __getitem__(self, key):
        shape = np.empty(self.shape, bool)[key].shape
        if _basic(key):
            return ComplexArray._view(self, key, shape)
        re, im = self.re, self.im
        return ComplexArray(None if re is None else re[key], None if im is None else im[key],
                            shape, self.real_dtype)

    def __setitem__(self, key, value):
        re, im = parts(value)
        self._write("re", key, re)
        self._write("im", key, im)

    def _write(self, name, key, value):
        """part[key] = value (None: 0), the part made writable first (`_writable`)."""
        if value is None and self._read(name) is None:
            return
        self._writable(name, value)
        self._read(name)[key] = 0.0 if value is None else value

    def _own(self, name):
        """The part of `name` as NumPy's z.real and z.imag give it, a view of this array: made
        this array's own first (made where it is zero), so that a write into it (z.imag[1:] =
        v) reaches this array and no other."""
        if self._base is not None:
            self._base._own(name)
            return self._read(name)
        if getattr(self, "_" + name) is None or name not in self._owned:
            # (an engine's array where the other part is one, to take the engine's writes)
            other = getattr(self, "_im" if name == "re" else "_re")
            self._writable(name, other if is_engine_array(other) else None)
        return getattr(self, "_" + name)

    def _writable(self, name, value):
        """Make the part of `name` (of the array a view views) this array's own, able to hold
        `value`: made where it is zero, an engine's where value is and the part is a constant,
        a copy where another array holds it."""
        if self._base is not None:
            self._base._writable(name, value)
            return
        part = getattr(self, "_" + name)
        if part is None:
            part = (np.zeros_like(value, self.real_dtype, shape=self.shape)
                    if is_engine_array(value) else self._zeros())
        elif not is_engine_array(part) and is_engine_array(value):
            made = np.zeros_like(value, self.real_dtype, shape=self.shape)
            made[...] = part
            part = made
        elif name not in self._owned:
            part = np.copy(part)
        else:
            return
        setattr(self, "_" + name, part)
        self._owned.add(name)

    # -- conversions ---------------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise _hints.conversion_refused(
            "a complex array of a differentiation cannot become a plain ndarray",
            _hints.conversion_hint("complex arrays"))

    def __complex__(self):
        return complex(float(self.real), float(self.imag))

    def __float__(self):
        raise TypeError("cyad: float() of a complex number; take np.real or np.abs of it")

    def __bool__(self):
        return bool(np.any(np.not_equal(self, 0)))

    def astype(self, dtype, copy=True):
        dtype = np.dtype(dtype)
        if dtype.kind != "c":
            raise TypeError(f"cyad: a complex array cast to {dtype} would discard its "
                            "imaginary part; take np.real of it")
        part = np.finfo(dtype).dtype
        return ComplexArray(None if self.re is None else self.re.astype(part),
                            None if self.im is None else self.im.astype(part),
                            self.shape, part)

    def conj(self):
        return np.conjugate(self)

    conjugate = conj

    def __eq__(self, other):
        return np.equal(self, other)

    def __ne__(self, other):
        return np.not_equal(self, other)

    # -- the NumPy protocols -------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ufunc_call(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return function_call(func, args, kwargs)


# (below the class: these modules build ComplexArrays)
from cyad._complex.functions import function_call  # noqa: E402
from cyad._complex.ufuncs import ufunc_call  # noqa: E402

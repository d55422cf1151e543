"""The ndarray surface that every engine's array type shares, written once.

`Dual` (cyad/_dual/array.pyx) and `Tracer` (cyad/_tape/trace.py) derive from `ArrayMethods`: an
ndarray method is the NumPy function of the same name, an operator the ufunc of the same
name, so each reaches the engine through its `__array_function__` or `__array_ufunc__`
(NumPy's dispatch costs a few percent of a method's time). An engine's type defines only
what it does otherwise: its storage (shape, dtype, indexing), what reads its values as
Python objects (comparisons, bool, int, astype, item), and its measured fast paths (Dual's
arithmetic straight to the rule table, its whole-array sum and its copy).

A method ndarrays have and this surface lacks is named in an AttributeError
(`__getattr__`), with the NumPy function to call where cyad has one.
"""

import numpy as np

from cyad import _hints


cdef bint defers_to(object other):
    """Whether an operator leaves `other` its reflected method, as ndarray's operators do: an
    operand whose type sets ``__array_ufunc__ = None``, or has none and a positive
    ``__array_priority__``, as scipy.sparse's matrices, whose ``x @ A`` (and, for their
    matrix API, ``x * A``) is their own product."""
    if type(other) is float or type(other) is int or isinstance(other, (np.ndarray, np.generic)):
        return False
    cls = type(other)
    if hasattr(cls, "__array_ufunc__"):
        return cls.__array_ufunc__ is None
    priority = getattr(other, "__array_priority__", 0.0)
    return isinstance(priority, (int, float)) and priority > 0.0


cdef class ArrayMethods:
    # how the errors of the derived type name its arrays ("dual arrays")
    described_as = "arrays"

    @property
    def T(self):
        return np.transpose(self)

    def __len__(self):
        shape = self.shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    def __iter__(self):
        # iter() of a 0-d array raises at once, as ndarray's does (np.iterable asks iter())
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __reversed__(self):
        for i in range(len(self) - 1, -1, -1):
            yield self[i]

    # -- arithmetic: the ufuncs --------------------------------------------------------------
    def __add__(self, other):
        return np.add(self, other)

    def __radd__(self, other):
        return np.add(other, self)

    def __iadd__(self, other):
        return np.add(self, other, out=self)

    def __sub__(self, other):
        return np.subtract(self, other)

    def __rsub__(self, other):
        return np.subtract(other, self)

    def __isub__(self, other):
        return np.subtract(self, other, out=self)

    def __mul__(self, other):
        if defers_to(other):
            return NotImplemented
        return np.multiply(self, other)

    def __rmul__(self, other):
        return np.multiply(other, self)

    def __imul__(self, other):
        return np.multiply(self, other, out=self)

    def __truediv__(self, other):
        return np.true_divide(self, other)

    def __rtruediv__(self, other):
        return np.true_divide(other, self)

    def __itruediv__(self, other):
        return np.true_divide(self, other, out=self)

    def __pow__(self, other, mod):
        if mod is not None:
            raise TypeError(f"cyad: pow() with a modulus is not supported on {self.described_as}")
        return np.power(self, other)

    def __rpow__(self, other, mod):
        return np.power(other, self)

    def __ipow__(self, other):
        return np.power(self, other, out=self)

    def __matmul__(self, other):
        if defers_to(other):
            return NotImplemented
        return np.matmul(self, other)

    def __rmatmul__(self, other):
        return np.matmul(other, self)

    def __neg__(self):
        return np.negative(self)

    def __pos__(self):
        return np.positive(self)

    def __abs__(self):
        return np.absolute(self)

    # piecewise: // is constant between its jumps, % has derivative 1 in the dividend
    def __floordiv__(self, other):
        return np.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return np.floor_divide(other, self)

    def __ifloordiv__(self, other):
        return np.floor_divide(self, other, out=self)

    def __mod__(self, other):
        return np.remainder(self, other)

    def __rmod__(self, other):
        return np.remainder(other, self)

    def __imod__(self, other):
        return np.remainder(self, other, out=self)

    def __divmod__(self, other):
        return np.floor_divide(self, other), np.remainder(self, other)

    def __rdivmod__(self, other):
        return np.floor_divide(other, self), np.remainder(other, self)

    # -- ndarray methods: the NumPy functions ------------------------------------------------
    def reshape(self, *shape, order="C"):
        return np.reshape(self, shape[0] if len(shape) == 1 else shape, order=order)

    def ravel(self, order="C"):
        return np.ravel(self, order=order)

    def flatten(self, order="C"):
        return np.copy(np.ravel(self, order=order))

    def transpose(self, *axes):
        return np.transpose(self, axes[0] if len(axes) == 1 else (axes or None))

    def squeeze(self, axis=None):
        return np.squeeze(self, axis)

    def swapaxes(self, axis1, axis2):
        return np.swapaxes(self, axis1, axis2)

    def copy(self):
        return np.copy(self)

    def sum(self, axis=None, keepdims=False, initial=None, where=True):
        return np.sum(self, axis=axis, keepdims=keepdims, initial=initial, where=where)

    def prod(self, axis=None, keepdims=False, initial=None, where=True):
        return np.prod(self, axis=axis, keepdims=keepdims, initial=initial, where=where)

    def mean(self, axis=None, keepdims=False, where=True):
        return np.mean(self, axis=axis, keepdims=keepdims, where=where)

    def var(self, axis=None, ddof=0, keepdims=False):
        return np.var(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def std(self, axis=None, ddof=0, keepdims=False):
        return np.std(self, axis=axis, ddof=ddof, keepdims=keepdims)

    def max(self, axis=None, keepdims=False, initial=None, where=True):
        return np.max(self, axis=axis, keepdims=keepdims, initial=initial, where=where)

    def min(self, axis=None, keepdims=False, initial=None, where=True):
        return np.min(self, axis=axis, keepdims=keepdims, initial=initial, where=where)

    def cumsum(self, axis=None):
        return np.cumsum(self, axis=axis)

    def cumprod(self, axis=None):
        return np.cumprod(self, axis=axis)

    def dot(self, other):
        return np.dot(self, other)

    def clip(self, min=None, max=None):
        return np.clip(self, min, max)

    def trace(self, offset=0, axis1=0, axis2=1):
        return np.trace(self, offset, axis1, axis2)

    def round(self, decimals=0):
        return np.round(self, decimals)

    def diagonal(self, offset=0, axis1=0, axis2=1):
        return np.diagonal(self, offset, axis1, axis2)

    def take(self, indices, axis=None, mode="raise"):
        return np.take(self, indices, axis, mode=mode)

    def repeat(self, repeats, axis=None):
        return np.repeat(self, repeats, axis)

    # integers and booleans read off the values (constants)
    def argmax(self, axis=None):
        return np.argmax(self, axis)

    def argmin(self, axis=None):
        return np.argmin(self, axis)

    def argsort(self, axis=-1, kind=None):
        return np.argsort(self, axis, kind)

    def any(self, axis=None):
        return np.any(self, axis)

    def all(self, axis=None):
        return np.all(self, axis)

    def __getattr__(self, name):
        # an ndarray method cyad lacks: say so, rather than Python's error
        if not name.startswith("_") and hasattr(np.ndarray, name):
            raise _hints.missing_method(name, self.described_as)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

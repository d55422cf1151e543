"""`through_asarray`: library code that converts its arguments with np.asarray, differentiated.

Libraries begin their functions with ``x = np.asarray(x)`` (statsmodels' links and
distributions, many of SciPy's functions). An engine's array refuses to become an
ndarray, since that would drop its derivative, so such a function cannot be
differentiated as it is. Inside ``with cyad.through_asarray():``, NumPy's conversions
(`CONVERSIONS`) hand an engine's array back as it is (np.array: a copy, as NumPy's makes
one), and a list or tuple holding one becomes one array by np.stack; every other
argument goes to NumPy's own function. np.r_ and np.c_, whose module bound np.array at
import, get the replacement there too. The computation then stays on the engine's
arrays, where every operation goes through cyad's rules or is refused: no derivative
is dropped on the way. What still fails, loudly: writing an engine's array into a plain
ndarray (``plain[i] = x``), ndarray methods that take it as an operand
(``plain.dot(x)``), and compiled code that reads its buffer.

NumPy's module attributes are replaced for the scope's duration, so a conversion
looked up as ``np.asarray`` at call time is reached, in every thread (plain arguments
get NumPy's own result there, at the cost of a type check); a name bound before
(``from numpy import asarray``) is not. Scopes nest and may overlap across threads: the
originals come back when the last one ends.
"""
import contextlib
import threading

import numpy as np

from cyad._primitives._table import is_engine_array


def _holds_engine_array(a):
    if is_engine_array(a):
        return True
    return type(a) in (list, tuple) and any(_holds_engine_array(b) for b in a)


def _joined(a):
    """An engine's array of a (an engine array, or a nested list/tuple holding one)."""
    if type(a) in (list, tuple):
        return np.stack([_joined(b) for b in a])
    return a


def _converted(a, dtype, copy, ndmin=0):
    x = _joined(a)
    if dtype is not None and np.dtype(dtype) != x.dtype:
        x = x.astype(dtype)
    elif copy and x is a:
        x = np.copy(x)
    if ndmin > x.ndim:
        x = np.reshape(x, (1,) * (ndmin - x.ndim) + x.shape)
    return x


def _asarray(a, dtype=None, *args, **kwargs):
    if _holds_engine_array(a):
        return _converted(a, dtype, False)
    return _NUMPY["asarray"](a, dtype, *args, **kwargs)


def _asanyarray(a, dtype=None, *args, **kwargs):
    if _holds_engine_array(a):
        return _converted(a, dtype, False)
    return _NUMPY["asanyarray"](a, dtype, *args, **kwargs)


def _ascontiguousarray(a, dtype=None, *args, **kwargs):
    if _holds_engine_array(a):
        return _converted(a, dtype, False)
    return _NUMPY["ascontiguousarray"](a, dtype, *args, **kwargs)


def _asfortranarray(a, dtype=None, *args, **kwargs):
    if _holds_engine_array(a):
        return _converted(a, dtype, False)
    return _NUMPY["asfortranarray"](a, dtype, *args, **kwargs)


def _array(a, dtype=None, *args, copy=True, ndmin=0, **kwargs):
    if _holds_engine_array(a):
        # copy=False (NumPy 2: never copy) and None (copy if needed) keep the array
        return _converted(a, dtype, copy is True, ndmin)
    return _NUMPY["array"](a, dtype, *args, copy=copy, ndmin=ndmin, **kwargs)


# NumPy's conversions the scope replaces, by name: the replacement, and NumPy's own
CONVERSIONS = {"asarray": _asarray, "asanyarray": _asanyarray, "array": _array,
               "ascontiguousarray": _ascontiguousarray, "asfortranarray": _asfortranarray}
_NUMPY = {name: getattr(np, name) for name in CONVERSIONS}
for _name, _replacement in CONVERSIONS.items():
    _replacement.__name__ = _replacement.__qualname__ = _name
    _replacement.__doc__ = _NUMPY[_name].__doc__

# np.r_ and np.c_ convert their items with the `array` their module bound at import
_CONCATENATORS = type(np.r_).__getitem__.__globals__

_lock = threading.Lock()
_scopes = [0]    # the scopes open now, in every thread


class through_asarray(contextlib.ContextDecorator):
    """A scope in which NumPy's conversions pass cyad's arrays through.

    Library code that converts its arguments with ``np.asarray(x)`` (or ``np.array``,
    ``np.asanyarray``, ``np.ascontiguousarray``, ``np.asfortranarray``) cannot be
    differentiated as it is: cyad's arrays refuse to become plain ndarrays, which
    would drop their derivatives. Inside the scope, these functions return cyad's
    arrays as they are (``np.array`` a copy, as NumPy's does), and a list or tuple
    holding them (``np.array([x[0], x[1] ** 2])``) is stacked into one, and
    ``np.r_[...]`` and ``np.c_[...]`` join them; any other argument gets NumPy's own
    result. What still fails, with an error naming the line: writing cyad's arrays
    into plain ndarrays (``plain[i] = x``), ndarray methods given them as operands
    (``plain.dot(x)``), and compiled code that reads their memory. No derivative is
    dropped silently.

    The scope replaces the functions in the ``numpy`` module while it is open (in
    every thread; plain arguments pay a type check), so code that looks them up as
    ``np.asarray`` when it runs is reached; a name imported before (``from numpy
    import asarray``) keeps NumPy's function. Scopes nest. Use it as a ``with``
    block around the differentiation, or as a decorator of f.

    Examples
    --------
    >>> def logistic(x):
    ...     x = np.asarray(x)      # as libraries begin
    ...     return 1.0 / (1.0 + np.exp(-x))
    >>> with cyad.through_asarray():
    ...     g = cyad.derivative(logistic, 0.0)
    >>> float(g)
    0.25
    """

    def __enter__(self) -> "through_asarray":
        with _lock:
            if _scopes[0] == 0:
                for name, replacement in CONVERSIONS.items():
                    setattr(np, name, replacement)
                _CONCATENATORS["array"] = _array
            _scopes[0] += 1
        return self

    def __exit__(self, *exception: object) -> None:
        with _lock:
            _scopes[0] -= 1
            if _scopes[0] == 0:
                for name, replacement in CONVERSIONS.items():
                    if getattr(np, name) is replacement:
                        setattr(np, name, _NUMPY[name])
                if _CONCATENATORS["array"] is _array:
                    _CONCATENATORS["array"] = _NUMPY["array"]

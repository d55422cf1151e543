"""The complex-number functions on real arrays: np.real, np.imag, np.angle, np.real_if_close
and the complexity tests, as NumPy gives them for real input (a complex array's are in
cyad._complex.functions)."""
import numpy as np

from cyad._primitives._table import composition, constant, shape_of, shape_query


@composition(np.real)
def _real(val):
    """A real array's real part is the array itself (NumPy's np.real is a view of it)."""
    return val


@composition(np.real_if_close)
def _real_if_close(a, tol=100):
    return a


@composition(np.imag)
def _imag(val):
    return np.zeros_like(val)


@constant(np.angle)
def _angle(z, deg=False):
    """π where the sign bit is set (-0.0 included, as arctan2(0, -0.0) is), else 0."""
    return np.angle(z, deg)


@shape_query(np.iscomplex)
def _iscomplex(x):
    return np.zeros(shape_of(x), bool)[()]   # (of a 0-d array, a NumPy bool, as NumPy's)


@shape_query(np.isreal)
def _isreal(x):
    return np.ones(shape_of(x), bool)[()]


@shape_query(np.iscomplexobj)
def _iscomplexobj(x):
    return False


@shape_query(np.isrealobj)
def _isrealobj(x):
    return True

"""NumPy's elementwise functions that are not ufuncs, as compositions of ufuncs.

np.sinc is sin(pi x) / (pi x) away from 0 and its Maclaurin series near 0 (|pi x| < 1/2,
to the 20th power: below a rounding error there): so its value and derivatives at and
near 0 are exact to every order the engines take, with no 0/0 (JAX's convention: the
limits, sinc'(0) = 0, sinc''(0) = -pi^2/3).

np.nan_to_num replaces NaN and infinities by constants: where x is NaN or infinite (read
off its values, at every call) the result is that constant, with derivative 0 (NaN and
infinities have no derivative); elsewhere it is x. The replacements are differentiated
where they are cyad's arrays.
"""
import math

import numpy as np

from cyad._primitives._table import composition, is_engine_array

# sin(u) / u = sum over k of (-1)^k u^(2k) / (2k + 1)!, from the highest power down
_SINC_SERIES = tuple((-1) ** k / math.factorial(2 * k + 1) for k in reversed(range(11)))
_SERIES_RADIUS = 0.5


@composition(np.sinc)
def _sinc(x):
    if not is_engine_array(x):
        return np.sinc(x)
    u = np.pi * x
    near = (u < _SERIES_RADIUS) & (u > -_SERIES_RADIUS)
    small = np.where(near, u, 0.0)   # (no overflow of the series far out)
    w = small * small
    series = _SINC_SERIES[0]
    for coefficient in _SINC_SERIES[1:]:
        series = series * w + coefficient
    safe = np.where(near, 1.0, u)   # no 0/0 where the series stands
    return np.where(near, series, np.sin(safe) / safe)


@composition(np.nan_to_num)
def _nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if not is_engine_array(x):
        return np.nan_to_num(x, copy=copy, nan=nan, posinf=posinf, neginf=neginf)
    info = np.finfo(x.dtype)
    posinf = info.max if posinf is None else posinf
    neginf = info.min if neginf is None else neginf
    result = np.where(np.isnan(x), nan, x)
    result = np.where(x == np.inf, posinf, result)
    result = np.where(x == -np.inf, neginf, result)
    if copy:
        return result
    x[...] = result
    return x

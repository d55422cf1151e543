"""The public operators: thin, compiled, allocation-free with a prep and out=.

Each operator finds (or checks) its `Prep` and makes one call into it; all the
work is in `_core.pyx`. A call of a Python callable made while cyad differentiates
another (from inside that one) is a nested differentiation and goes to `_nested.py`. They are compiled so that a prepared call with `out=`
creates no Python objects: keyword arguments are parsed without a dict, and the
result is the caller's own buffer (or pair of buffers).
"""
import numpy as np

from cyad._core cimport (Prep, Family, PUSHFORWARD, DERIVATIVE, GRADIENT, JACOBIAN,
                         SECOND_DERIVATIVE, HVP, HESSIAN)
from cyad._dual cimport differentiating
from cyad._wrapper cimport is_python_function
from cyad import _nested


cdef Prep _prep(Family family, object f, object x, object dx, object y,
                object prep, object chunk):
    # a new prep, or the given one checked against the call's form
    cdef Prep p
    if prep is None:
        return _new_prep(family, f, x, dx, y, chunk)
    if not isinstance(prep, Prep):
        raise TypeError(f"cyad: prep must come from a prepare_* function, not {type(prep).__name__}")
    p = <Prep>prep
    p.check_form(family, y)
    if chunk is not None and chunk != p.chunk:
        raise ValueError(f"cyad: chunk={chunk} differs from the prep's chunk {p.chunk}")
    return p


cdef Prep _new_prep(Family family, object f, object x, object dx, object y, object chunk):
    if family == PUSHFORWARD or family == HVP:
        directions = len(<tuple>dx) if isinstance(dx, tuple) else 1
    elif family == DERIVATIVE or family == SECOND_DERIVATIVE:
        if np.ndim(x) != 0:
            name = "derivative" if family == DERIVATIVE else "second_derivative"
            raise ValueError(f"cyad: {name} takes a scalar x, not an array of shape "
                             f"{np.shape(x)}; use pushforward or jacobian (hvp or hessian) for "
                             "arrays")
        directions = 1
    else:
        directions = np.size(x)
    return Prep(family, f, x, directions, y, chunk)


# -- pushforward ---------------------------------------------------------------------

def prepare_pushforward(f, x, dx, *, y=None, chunk=None):
    """Prepare `pushforward` and `value_and_pushforward` of f at inputs shaped like x.

    Parameters
    ----------
    f : callable or FunctionWrapper
        ``f(x)`` returning an array or number, or ``f(y, x)`` writing into y (with ``y=``).
    x : array_like or float
        An input of the shape and dtype later calls use.
    dx : array_like, float or tuple of them
        A tangent shaped like x, or a tuple of tangents (a batch).
    y : ndarray, optional
        The output buffer of a two-argument f.
    chunk : int, optional
        Tangents carried per evaluation of f (default: all, within a memory budget).

    Returns
    -------
    Prep
    """
    return _new_prep(PUSHFORWARD, f, x, dx, y, chunk)


def pushforward(f, x, dx, *, y=None, prep=None, out=None, chunk=None):
    """The Jacobian-vector product J(x) @ dx, shaped like f(x).

    Parameters
    ----------
    f : callable or FunctionWrapper
        ``f(x)``, or ``f(y, x)`` writing its output into y when ``y=`` is given.
    x : array_like or float
    dx : array_like, float or tuple of them
        One tangent shaped like x, or a tuple of tangents (answered by a tuple).
    y : ndarray, optional
        Output buffer of a two-argument f; afterwards it holds f's value.
    prep : Prep, optional
        From `prepare_pushforward`, for repeated calls.
    out : ndarray or tuple of ndarray, optional
        Written in place and returned (a tuple for a batch of tangents).
    chunk : int, optional
        Tangents per evaluation of f.

    Returns
    -------
    ndarray or float, or a tuple of them for a batch
    """
    if differentiating() and is_python_function(f):
        return _nested.pushforward(f, x, dx, y, out, False)
    cdef Prep p = _prep(PUSHFORWARD, f, x, dx, y, prep, chunk)
    return _scalar_result(p.pushforward(f, x, dx, y, out, False), out)


def value_and_pushforward(f, x, dx, *, y=None, prep=None, out=None, chunk=None):
    """f(x) and J(x) @ dx.

    Takes the arguments of `pushforward`; ``out=`` is a pair ``(value_out, tangent_out)``
    (``tangent_out`` a tuple for a batch), written in place and returned. In the
    two-argument form the value is also written into y.

    Returns
    -------
    (value, pushforward)
    """
    if differentiating() and is_python_function(f):
        return _nested.pushforward(f, x, dx, y, out, True)
    cdef Prep p = _prep(PUSHFORWARD, f, x, dx, y, prep, chunk)
    return _scalar_pair(p.pushforward(f, x, dx, y, out, True), out)


# -- derivative ------------------------------------------------------------------------

def prepare_derivative(f, x, *, y=None, chunk=None):
    """Prepare `derivative` and `value_and_derivative` of f at a scalar x.

    Returns
    -------
    Prep
    """
    return _new_prep(DERIVATIVE, f, x, None, y, chunk)


def derivative(f, x, *, y=None, prep=None, out=None, chunk=None):
    """df/dx for a scalar x, shaped like f(x).

    Parameters
    ----------
    f : callable or FunctionWrapper
        ``f(x)``, or ``f(y, x)`` writing into y when ``y=`` is given.
    x : float
    y, prep, out, chunk
        As for `pushforward`.

    Returns
    -------
    ndarray or float
    """
    if differentiating() and is_python_function(f):
        return _nested.pushforward(f, x, 1.0, y, out, False, True)
    cdef Prep p = _prep(DERIVATIVE, f, x, None, y, prep, chunk)
    return _scalar_result(p.pushforward(f, x, 1.0, y, out, False), out)


def value_and_derivative(f, x, *, y=None, prep=None, out=None, chunk=None):
    """f(x) and df/dx for a scalar x; ``out=`` is a pair ``(value_out, derivative_out)``.

    Returns
    -------
    (value, derivative)
    """
    if differentiating() and is_python_function(f):
        return _nested.pushforward(f, x, 1.0, y, out, True, True)
    cdef Prep p = _prep(DERIVATIVE, f, x, None, y, prep, chunk)
    return _scalar_pair(p.pushforward(f, x, 1.0, y, out, True), out)


# -- gradient --------------------------------------------------------------------------

def prepare_gradient(f, x, *, y=None, chunk=None):
    """Prepare `gradient` and `value_and_gradient` of a scalar-valued f at inputs shaped like x.

    Returns
    -------
    Prep
    """
    return _new_prep(GRADIENT, f, x, None, y, chunk)


def gradient(f, x, *, y=None, prep=None, out=None, chunk=None):
    """The gradient of a scalar-valued f, shaped like x.

    Parameters
    ----------
    f : callable or FunctionWrapper
        ``f(x)`` returning a scalar, or ``f(y, x)`` writing into a 0-d y.
    x : array_like
    y, prep, out, chunk
        As for `pushforward`; ``chunk`` is the number of input directions per evaluation.

    Returns
    -------
    ndarray
    """
    if differentiating() and is_python_function(f):
        return _nested.jacobian(f, x, y, out, False, True)
    cdef Prep p = _prep(GRADIENT, f, x, None, y, prep, chunk)
    return p.jacobian(f, x, y, out, False)


def value_and_gradient(f, x, *, y=None, prep=None, out=None, chunk=None):
    """f(x) as a float and its gradient; ``out=`` is a pair ``(value_out, gradient_out)``
    with ``value_out`` a 0-d array.

    Returns
    -------
    (float, ndarray)
    """
    if differentiating() and is_python_function(f):
        return _nested.jacobian(f, x, y, out, True, True)
    cdef Prep p = _prep(GRADIENT, f, x, None, y, prep, chunk)
    return _scalar_pair(p.jacobian(f, x, y, out, True), out)


# -- jacobian --------------------------------------------------------------------------

def prepare_jacobian(f, x, *, y=None, chunk=None):
    """Prepare `jacobian` and `value_and_jacobian` of f at inputs shaped like x.

    Returns
    -------
    Prep
    """
    return _new_prep(JACOBIAN, f, x, None, y, chunk)


def jacobian(f, x, *, y=None, prep=None, out=None, chunk=None):
    """The Jacobian of f at x, of shape ``f(x).shape + x.shape``.

    Parameters
    ----------
    f : callable or FunctionWrapper
        ``f(x)``, or ``f(y, x)`` writing into y when ``y=`` is given.
    x : array_like
    y, prep, out, chunk
        As for `gradient`.

    Returns
    -------
    ndarray
    """
    if differentiating() and is_python_function(f):
        return _nested.jacobian(f, x, y, out, False, False)
    cdef Prep p = _prep(JACOBIAN, f, x, None, y, prep, chunk)
    return p.jacobian(f, x, y, out, False)


def value_and_jacobian(f, x, *, y=None, prep=None, out=None, chunk=None):
    """f(x) and its Jacobian; ``out=`` is a pair ``(value_out, jacobian_out)``.

    Returns
    -------
    (value, ndarray)
    """
    if differentiating() and is_python_function(f):
        return _nested.jacobian(f, x, y, out, True, False)
    cdef Prep p = _prep(JACOBIAN, f, x, None, y, prep, chunk)
    return _scalar_pair(p.jacobian(f, x, y, out, True), out)


# -- second order ------------------------------------------------------------------------

cdef _refuse_nesting(str name):
    # second order nests forward over forward itself: a third level is not supported
    if differentiating():
        raise TypeError(f"cyad: {name} cannot run inside a function cyad is differentiating "
                        "(only two levels of differentiation nest)")


def prepare_second_derivative(f, x, *, y=None, chunk=None):
    """Prepare `second_derivative` and `value_derivative_and_second_derivative` of f at a
    scalar x.

    Returns
    -------
    Prep
    """
    return _new_prep(SECOND_DERIVATIVE, f, x, None, y, chunk)


def second_derivative(f, x, *, y=None, prep=None, out=None, chunk=None):
    """d2f/dx2 for a scalar x, shaped like f(x).

    Parameters
    ----------
    f : callable or FunctionWrapper
        ``f(x)``, or ``f(y, x)`` writing into y when ``y=`` is given. A C function needs
        a second-order function of cyad's signature.
    x : float
    y, prep, out, chunk
        As for `derivative`.

    Returns
    -------
    ndarray or float
    """
    _refuse_nesting("second_derivative")
    cdef Prep p = _prep(SECOND_DERIVATIVE, f, x, None, y, prep, chunk)
    return _scalar_result(p.second(f, x, None, y, out, 1), out)


def value_derivative_and_second_derivative(f, x, *, y=None, prep=None, out=None, chunk=None):
    """f(x), df/dx and d2f/dx2 for a scalar x; ``out=`` is a triple of buffers.

    Returns
    -------
    (value, derivative, second_derivative)
    """
    _refuse_nesting("value_derivative_and_second_derivative")
    cdef Prep p = _prep(SECOND_DERIVATIVE, f, x, None, y, prep, chunk)
    return _scalar_tuple(p.second(f, x, None, y, out, 3), out)


def prepare_hvp(f, x, v, *, y=None, chunk=None):
    """Prepare `hvp` and `gradient_and_hvp` of a scalar-valued f at inputs shaped like x,
    for one tangent v or a tuple of them.

    Returns
    -------
    Prep
    """
    return _new_prep(HVP, f, x, v, y, chunk)


def hvp(f, x, v, *, y=None, prep=None, out=None, chunk=None):
    """The Hessian-vector product H(x) @ v of a scalar-valued f, shaped like x.

    Parameters
    ----------
    f : callable or FunctionWrapper
        ``f(x)`` returning a scalar, or ``f(y, x)`` writing into a 0-d y.
    x : array_like
    v : array_like or tuple of them
        A tangent shaped like x, or a tuple of them (answered by a tuple).
    y, prep, out, chunk
        As for `gradient`; ``chunk`` is the number of basis directions per evaluation.

    Returns
    -------
    ndarray, or a tuple of them for a tuple of tangents
    """
    _refuse_nesting("hvp")
    cdef Prep p = _prep(HVP, f, x, v, y, prep, chunk)
    return p.second(f, x, v, y, out, 1)


def gradient_and_hvp(f, x, v, *, y=None, prep=None, out=None, chunk=None):
    """The gradient of a scalar-valued f and H(x) @ v; ``out=`` is a pair
    ``(gradient_out, hvp_out)``.

    Returns
    -------
    (ndarray, ndarray or tuple of ndarray)
    """
    _refuse_nesting("gradient_and_hvp")
    cdef Prep p = _prep(HVP, f, x, v, y, prep, chunk)
    return p.second(f, x, v, y, out, 2)


def prepare_hessian(f, x, *, y=None, chunk=None):
    """Prepare `hessian` and `value_gradient_and_hessian` of a scalar-valued f at inputs
    shaped like x.

    Returns
    -------
    Prep
    """
    return _new_prep(HESSIAN, f, x, None, y, chunk)


def hessian(f, x, *, y=None, prep=None, out=None, chunk=None):
    """The Hessian of a scalar-valued f, of shape ``x.shape + x.shape``.

    Parameters
    ----------
    f : callable or FunctionWrapper
        ``f(x)`` returning a scalar, or ``f(y, x)`` writing into a 0-d y.
    x : array_like
    y, prep, out, chunk
        As for `gradient`; ``chunk`` is the number of directions per evaluation at each
        of the two levels.

    Returns
    -------
    ndarray
    """
    _refuse_nesting("hessian")
    cdef Prep p = _prep(HESSIAN, f, x, None, y, prep, chunk)
    return p.second(f, x, None, y, out, 1)


def value_gradient_and_hessian(f, x, *, y=None, prep=None, out=None, chunk=None):
    """f(x) as a float, its gradient and its Hessian; ``out=`` is a triple
    ``(value_out, gradient_out, hessian_out)`` with ``value_out`` a 0-d array.

    Returns
    -------
    (float, ndarray, ndarray)
    """
    _refuse_nesting("value_gradient_and_hessian")
    cdef Prep p = _prep(HESSIAN, f, x, None, y, prep, chunk)
    return _scalar_tuple(p.second(f, x, None, y, out, 3), out)


# -- 0-d results are returned as floats when the caller gave no buffer ------------------

cdef object _scalar_result(object r, object out):
    if out is None and isinstance(r, np.ndarray) and (<object>r).ndim == 0:
        return float(r)
    return r


cdef object _scalar_pair(tuple r, object out):
    if out is not None:
        return out
    return (_scalar_result(r[0], None), _scalar_result(r[1], None))


cdef object _scalar_tuple(tuple r, object out):
    if out is not None:
        return out
    return tuple([_scalar_result(x, None) for x in r])

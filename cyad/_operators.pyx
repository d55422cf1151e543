"""The public operators: thin, compiled, allocation-free with a prep and out=.

Each operator finds (or checks) its `Prep` (cyad/_core.pyx: one class per family,
on the engine named by ``engine=``) and makes one call into it; all the work is
there and in the engine. A call of a Python callable made while cyad differentiates
another (from inside that one) is a nested differentiation and goes to `_nested.py`;
it runs without a prep, but refuses one that another call is using, as every call
does. The operators are compiled so that a prepared call with `out=` creates no
Python objects: keyword arguments are parsed without a dict, and the result is the
caller's own buffer (or pair of buffers). The docstrings share their common blocks
(cyad/_docstrings.py).
"""
import warnings

import numpy as np

cimport numpy as cnp
from cpython.complex cimport PyComplex_Check

cnp.import_array()

from cyad._core cimport (Prep, Family, PUSHFORWARD, DERIVATIVE, GRADIENT, JACOBIAN,
                         SECOND_DERIVATIVE, HVP, HESSIAN, PULLBACK, WITH_VALUE, WITH_FIRST,
                         refuse_busy)
from cyad._core import _BUSY, _FAMILY_NAMES
from cyad._families import PREP_TYPES as _PREP_TYPES
from cyad._engines import engine_type
from cyad._dual.array cimport differentiating
from cyad._wrapper cimport is_python_function, FunctionWrapper
from cyad._arguments.prepared cimport PreparedCall
from cyad._wrapper import ComplexValues
from cyad import _docstrings, _engines, _nested
from cyad._reporting import warnings as _warnings


cdef inline bint _recorded(object f):
    # whether f is a function cyad.record recorded
    return isinstance(f, FunctionWrapper) and (<FunctionWrapper>f).tape is not None


cdef inline bint _nests(object f, object prep, object engine) except -1:
    # whether the call nests in a running differentiation (a Python f called from inside the
    # f cyad is differentiating or tracing), refusing a prep that another call is using;
    # nested calls derive a program, whatever the engine (an unknown name is still refused)
    if differentiating() and (is_python_function(f) or _recorded(f)):
        refuse_busy(prep)
        if engine is not None:
            engine_type(engine)
        return True
    return False


cdef Prep _prep(Family family, object f, object x, object dx, object y,
                object prep, object chunk, object engine, object workers=None):
    # a new prep, or the given one checked against the call's form
    cdef Prep p
    if prep is None:
        return _new_prep(family, f, x, dx, y, chunk, engine, True, workers)
    if not isinstance(prep, Prep):
        raise TypeError(f"cyad: prep must come from a prepare_* function, not "
                        f"{type(prep).__name__}")
    p = <Prep>prep
    p.check_form(family, y)
    if chunk is not None and chunk != p.chunk:
        raise ValueError(f"cyad: chunk={chunk} differs from the prep's chunk {p.chunk}")
    if engine is not None and engine != p.engine_made:
        engine_type(engine)     # an unknown name says so
        raise ValueError(f"cyad: engine={engine!r} differs from the prep's engine "
                         f"{p.engine_made!r}")
    if workers is not None and (workers is not p.workers_map if callable(workers)
                                else p.workers_map is not None or _workers(workers) != p.workers):
        raise ValueError(f"cyad: workers={workers!r} differs from the prep's workers "
                         f"{p.workers if p.workers_map is None else p.workers_map!r}")
    return p


cdef int _workers(object workers) except -1:
    # workers= of an operator or a prep: None, a positive int (a map-like: 1)
    if workers is None or callable(workers):
        return 1
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"cyad: workers= takes None or a positive int, not {workers!r}")
    return int(workers)


cdef Prep _new_prep(Family family, object f, object x, object dx, object y, object chunk,
                    object engine, bint one_shot, object workers=None):
    # the family's prep, made from the operator's arguments; `one_shot`: for one call
    # (an operator called without prep=); `workers`: its calls' parts at once
    cdef Prep p
    cdef bint chosen = engine is None
    cdef int k = _workers(workers)
    cdef str reason = "named with engine="
    if chosen:
        engine, reason = _engines.default_engine(_FAMILY_NAMES[family], _recorded(f),
                                                 is_python_function(f), np.size(x), one_shot)
    p = _PREP_TYPES[family](f, x, dx, y, chunk, engine)
    p.engine_reason = reason
    # (a recorded function's tape is f's as recorded: no Python state is watched, and no
    # dual engine takes over)
    p.engine_state.chosen = chosen and not _recorded(f)
    if k > 1:
        p._set_workers(k, [_PREP_TYPES[family](f, x, dx, y, chunk, engine)
                           for _ in range(k - 1)] if p.engine_state.splits(p) else [])
        if not p.engine_state.splits(p):
            warnings.warn(_warnings.serial_workers(k, _FAMILY_NAMES[family], replays=p.replays),
                          _warnings.CyadWarning, stacklevel=1)
    elif callable(workers):
        p._set_map(workers, chunk, None if chosen else engine)
    return p


cdef object _arguments_operators = None


cdef object _arguments():
    # cyad/_arguments/operators.py, imported at the first call that needs it
    global _arguments_operators
    if _arguments_operators is None:
        from cyad._arguments import operators
        _arguments_operators = operators
    return _arguments_operators


cdef inline bint _takes_arguments(tuple args, object argnums, bint has_aux,
                                  bint flat) except -1:
    # whether the call's own options are the arguments layer's
    return len(args) > 0 or has_aux or flat or not (argnums is 0 or argnums == 0)


cdef bint _arguments_call(object x, object prep) except -1:
    # a container x (not an array, a number, a list of numbers) or a prep of the
    # arguments layer: its call
    if cnp.PyArray_Check(x) or isinstance(x, (float, int)) or isinstance(prep, Prep):
        return False
    if prep is not None:
        return isinstance(prep, _arguments().ArgumentsPrep)
    return _arguments().is_container(x)


cdef object _complex_operators = None


cdef object _complex():
    # cyad/_complex/operators.py, imported at the first complex call
    global _complex_operators
    if _complex_operators is None:
        from cyad._complex import operators
        _complex_operators = operators
    return _complex_operators


cdef bint _is_complex(object x) except -1:
    # whether x is complex: a number, an ndarray, a list of them, a complex array of
    # cyad._complex (inside another differentiation)
    if cnp.PyArray_Check(x):
        return cnp.PyArray_ISCOMPLEX(<cnp.ndarray>x)
    if PyComplex_Check(x) or isinstance(x, np.complexfloating):
        return True
    if type(x) is list or type(x) is tuple:
        return np.asarray(x).dtype.kind == "c"
    return getattr(type(x), "__cyad_complex__", False)


cdef object _complex_prep(object prep):
    # the prep a complex call takes: a complex prep, the one a real prep made when f's
    # values proved complex, or None; False when the call is real
    if prep is None:
        return False
    if isinstance(prep, Prep):
        return False if (<Prep>prep).complex_prep is None else (<Prep>prep).complex_prep
    return prep if isinstance(prep, _complex().ComplexPrep) else False


cdef object _operate(Family family, int wanted, object f, object x, object v, object y,
                     object prep, object out, object chunk, object engine, object workers,
                     bint holomorphic, tuple args, object argnums, bint has_aux, bint flat):
    # an operator's call: of f(x, *args), with argnums=, has_aux= or containers,
    # cyad/_arguments/operators.py's; on complex x or complex values of f (a complex y
    # among them), cyad/_complex/operators.py's; inside a running differentiation, a
    # nested one; else the prep's
    cdef Prep p
    cdef object complex_prep
    if _takes_arguments(args, argnums, has_aux, flat) or _arguments_call(x, prep):
        if holomorphic:
            raise TypeError("cyad: holomorphic=True takes one complex array x, without other "
                            "arguments, argnums= or has_aux=")
        if (not has_aux and prep is not None and type(prep) is _arguments().ArgumentsPrep
                and prep.fast is not None):
            r = (<PreparedCall>prep.fast).call(family, f, x, args, argnums, flat, v, y, out,
                                               wanted)
            if r is not None:
                return _shaped_result(family, wanted, r, out)
        return _arguments().call(_FAMILY_NAMES[family], wanted, f, x, args, v, y, prep, out,
                                 argnums, has_aux, flat, chunk, engine, workers)
    complex_prep = _complex_prep(prep)
    if complex_prep is not False:
        if not wanted and y is None and _repeated(complex_prep, family, f, x, v, out,
                                                  holomorphic):
            return out
        return complex_prep.call(_FAMILY_NAMES[family], holomorphic, wanted, f, x, v, y, out,
                                 chunk, engine, workers)
    if holomorphic or (prep is None and (_is_complex(x) or (y is not None and _is_complex(y)))):
        return _complex().call(_FAMILY_NAMES[family], wanted, f, x, v, y, out, chunk, engine,
                               workers, holomorphic)
    try:
        if _nests(f, prep, engine):
            return _nested_call(family, wanted, f, x, v, y, out)
        p = _prep(family, f, x, v, y, prep, chunk, engine, workers)
        r = p.call(f, x, 1.0 if family == DERIVATIVE else v, y, out, wanted)
    except ComplexValues:
        # f's values are complex: the call, and the prep's later ones, are complex calls
        if prep is None:
            return _complex().call(_FAMILY_NAMES[family], wanted, f, x, v, y, out, chunk,
                                   engine, workers, False)
        p = <Prep>prep
        p.complex_prep = _complex().prepare(_FAMILY_NAMES[family], f, x, v, y, p.chunk,
                                            p.engine_made, workers, False)
        return p.complex_prep.call(_FAMILY_NAMES[family], False, wanted, f, x, v, y, out,
                                   chunk, engine, workers)
    return _shaped_result(family, wanted, r, out)


cdef object _shaped_result(Family family, int wanted, object r, object out):
    # a prep's result as the operator returns it (a scalar's as a number)
    if not wanted:
        if family == PUSHFORWARD or family == PULLBACK or family == DERIVATIVE or \
                family == SECOND_DERIVATIVE:
            return _scalar_result(r, out)
        return r
    return r if family == HVP else _scalar_tuple(r, out)


cdef bint _repeated(object complex_prep, Family family, object f, object x, object v,
                    object out, bint holomorphic) except -1:
    # a complex prep's call with the arrays of its last in-place call, made again without
    # its Python layer: the real prep's call on the same views of them (their new values);
    # False where the call is another
    cdef object kept = complex_prep._kept
    cdef tuple t
    cdef Prep p
    if kept is None:
        return False
    t = <tuple>kept
    if (x is not t[0] or v is not t[1] or out is not t[2] or f is not t[3]
            or t[4] != _FAMILY_NAMES[family] or t[5] != holomorphic):
        return False
    lock = complex_prep._busy
    if not lock.acquire(False):
        raise RuntimeError(_BUSY)
    try:
        p = <Prep>t[6]
        p.call(complex_prep.function, t[7], 1.0 if p.family == DERIVATIVE else t[8], None,
               t[9], 0)
        if t[10] is not None:       # jax.vjp's conjugate
            np.negative(t[10], out=t[10])
    finally:
        lock.release()
    return True


cdef object _nested_call(Family family, int wanted, object f, object x, object v, object y,
                         object out):
    # an operator's call nested in a running differentiation (cyad/_nested.py)
    cdef bint with_value = wanted != 0
    if family == PUSHFORWARD:
        return _nested.pushforward(f, x, v, y, out, with_value)
    if family == DERIVATIVE:
        return _nested.pushforward(f, x, 1.0, y, out, with_value, True)
    if family == PULLBACK:
        return _nested.pullback(f, x, v, y, out, with_value)
    if family == GRADIENT or family == JACOBIAN:
        return _nested.jacobian(f, x, y, out, with_value, family == GRADIENT)
    if family == SECOND_DERIVATIVE:
        return _nested.second_derivative(f, x, y, out, with_value)
    if family == HVP:
        return _nested.hvp(f, x, v, y, out, with_value)
    return _nested.hessian(f, x, y, out, with_value)


cdef object _prepare_call(Family family, object f, object x, object v, object y,
                          object chunk, object engine, object workers, bint holomorphic,
                          tuple args, object argnums, bint has_aux, bint flat):
    # a prepare_* function's prep: of f(x, *args) for the arguments layer's calls; a
    # complex one for complex x or complex values of f
    if _takes_arguments(args, argnums, has_aux, flat) or _arguments_call(x, None):
        if holomorphic:
            raise TypeError("cyad: holomorphic=True takes one complex array x, without other "
                            "arguments, argnums= or has_aux=")
        return _arguments().prepare(_FAMILY_NAMES[family], f, x, args, v, y, argnums,
                                    has_aux, flat, chunk, engine, workers)
    if holomorphic or _is_complex(x) or (y is not None and _is_complex(y)):
        return _complex().prepare(_FAMILY_NAMES[family], f, x, v, y, chunk, engine, workers,
                                  holomorphic)
    try:
        return _new_prep(family, f, x, v, y, chunk, engine, False, workers)
    except ComplexValues:
        return _complex().prepare(_FAMILY_NAMES[family], f, x, v, y, chunk, engine, workers,
                                  False)


# -- pushforward ---------------------------------------------------------------------

def prepare_pushforward(f, x, dx, *args, y=None, chunk=None, engine=None, workers=None, argnums=0,
                        has_aux=False):
    """Prepare `pushforward` and `value_and_pushforward` of f at inputs shaped like x.

    Parameters
    ----------
    %(f)s
    x : array_like or float
        An input of the shape and dtype the prepared calls take.
    dx : array_like, float or tuple of them
        A tangent shaped like x, or a tuple of tangents (a batch of that size).
    %(y)s
    %(chunk_tangents)s
    %(engine_prepare)s
    %(workers)s
    %(arguments)s

    Returns
    -------
    %(returns_prep)s

    Raises
    ------
    ValueError
        If x is empty or ``chunk`` is not a positive integer.
    %(raises_prepare_type)s

    Examples
    --------
    >>> def f(x):
    ...     return x ** 2
    >>> x, dx, out = np.array([1.0, 2.0]), np.array([1.0, 1.0]), np.empty(2)
    >>> prep = cyad.prepare_pushforward(f, x, dx)
    >>> cyad.pushforward(f, x, dx, prep=prep, out=out) is out
    True
    >>> out
    array([2., 4.])
    """
    return _prepare_call(PUSHFORWARD, f, x, dx, y, chunk, engine, workers, False,
                         args, argnums, has_aux, False)


def pushforward(f, x, dx, *args, y=None, prep=None, out=None, chunk=None, engine=None,
                workers=None, argnums=0, has_aux=False):
    """The Jacobian-vector product J(x) @ dx, shaped like f(x).

    Parameters
    ----------
    %(f)s
    x : array_like or float
        Where to differentiate. float64 and float32 are kept, complex128 and complex64 too
        (JAX's conventions: docs guide/complex); integers and bools become float64.
    dx : array_like, float or tuple of them
        A tangent shaped like x, or a tuple of tangents (a batch, answered by a tuple).
    %(y)s
    %(prep)s
    out : ndarray or tuple of ndarray, optional
        C-contiguous buffer of exactly the result's shape and dtype (a tuple of them for a
        batch), written in place and returned.
    %(chunk_tangents)s
    %(engine)s
    %(workers)s
    %(arguments)s

    Returns
    -------
    ndarray or float, or tuple of ndarray
        J(x) @ dx in x's dtype: a float when f is scalar-valued and no ``out=`` is given,
        a tuple of arrays for a batch, ``out`` itself when given.

    Raises
    ------
    %(raises_value)s
    %(raises_type)s
    %(raises_call)s

    See Also
    --------
    value_and_pushforward, prepare_pushforward, jacobian

    Examples
    --------
    >>> cyad.pushforward(np.sin, 0.0, 1.0)
    1.0
    >>> x = np.array([1.0, 2.0])
    >>> cyad.pushforward(lambda x: x ** 2, x, np.array([1.0, 0.0]))
    array([2., 0.])

    A tuple of tangents is a batch, computed in one evaluation of f:

    >>> cyad.pushforward(lambda x: x ** 2, x, (np.array([1.0, 0.0]), np.array([0.0, 1.0])))
    (array([2., 0.]), array([0., 4.]))
    """
    return _operate(PUSHFORWARD, 0, f, x, dx, y, prep, out, chunk, engine, workers, False,
                    args, argnums, has_aux, False)


def value_and_pushforward(f, x, dx, *args, y=None, prep=None, out=None, chunk=None, engine=None,
                          workers=None, argnums=0, has_aux=False):
    """f(x) and the Jacobian-vector product J(x) @ dx.

    Parameters
    ----------
    f, x, dx, y, prep, chunk, engine, workers
        As for `pushforward`.
    out : tuple, optional
        A pair ``(value_out, tangent_out)`` (``tangent_out`` a tuple for a batch), written in
        place and returned.
    %(arguments)s

    Returns
    -------
    value : ndarray or float
        f(x); in the two-argument form, y itself.
    tangent : ndarray or float, or tuple of ndarray
        J(x) @ dx, as `pushforward` returns it.

    Raises
    ------
    ValueError
        If the arguments do not fit ``prep``, ``y`` or ``out``
        (see `pushforward`).
    TypeError
        If x is not real or f drops a derivative (see `pushforward`).
    %(raises_call)s

    Examples
    --------
    >>> cyad.value_and_pushforward(lambda x: x ** 3, 2.0, 1.0)
    (8.0, 12.0)
    """
    return _operate(PUSHFORWARD, WITH_VALUE, f, x, dx, y, prep, out, chunk, engine, workers, False,
                    args, argnums, has_aux, False)


# -- pullback ----------------------------------------------------------------------------

def prepare_pullback(f, x, dy, *args, y=None, chunk=None, engine=None, workers=None, argnums=0,
                     has_aux=False):
    """Prepare `pullback` and `value_and_pullback` of f at inputs shaped like x.

    Parameters
    ----------
    %(f)s
    x : array_like or float
        An input of the shape and dtype the prepared calls take.
    dy : array_like, float or tuple of them
        A cotangent shaped like f(x), or a tuple of cotangents (a batch of that size).
    %(y)s
    %(chunk_pullback)s
    %(engine_prepare)s
    %(workers)s
    %(arguments)s

    Returns
    -------
    %(returns_prep)s

    Raises
    ------
    ValueError
        If x is empty or ``chunk`` is not a positive integer.
    %(raises_prepare_type)s

    Examples
    --------
    >>> def f(x):
    ...     return x ** 2
    >>> x, dy, out = np.array([1.0, 2.0]), np.array([1.0, 1.0]), np.empty(2)
    >>> prep = cyad.prepare_pullback(f, x, dy, engine="tape")
    >>> cyad.pullback(f, x, dy, prep=prep, out=out) is out
    True
    >>> out
    array([2., 4.])
    """
    return _prepare_call(PULLBACK, f, x, dy, y, chunk, engine, workers, False,
                         args, argnums, has_aux, False)


def pullback(f, x, dy, *args, y=None, prep=None, out=None, chunk=None, engine=None, workers=None,
             argnums=0, has_aux=False):
    """The vector-Jacobian product dy @ J(x), shaped like x.

    ``engine="tape"`` is the engine made for it: reverse mode, one sweep of f's
    recorded tape per chunk of cotangents, whatever the size of x. The dual engine answers too,
    by forward mode (a chunk of x's basis directions per evaluation of f, contracted
    with the cotangents as they come): what a Jacobian costs.

    Parameters
    ----------
    %(f)s
    x : array_like or float
        Where to differentiate. float64 and float32 are kept, complex128 and complex64 too
        (JAX's conventions: docs guide/complex); integers and bools become float64.
    dy : array_like, float or tuple of them
        A cotangent shaped like f(x), in x's dtype, or a tuple of cotangents (a batch,
        answered by a tuple).
    %(y)s
    %(prep)s
    out : ndarray or tuple of ndarray, optional
        C-contiguous buffer of x's shape and dtype (a tuple of them for a batch),
        written in place and returned.
    %(chunk_pullback)s
    %(engine)s
    %(workers)s
    %(arguments)s

    Returns
    -------
    ndarray or float, or tuple of ndarray
        dy @ J(x) in x's dtype: a float when x is a scalar and no ``out=`` is given, a
        tuple for a batch, ``out`` itself when given.

    Raises
    ------
    %(raises_value)s
        Also if a cotangent is not shaped like f(x).
    %(raises_type)s
    %(raises_call)s

    See Also
    --------
    value_and_pullback, prepare_pullback, pushforward, gradient

    Examples
    --------
    >>> x = np.array([1.0, 2.0])
    >>> cyad.pullback(lambda x: x ** 2, x, np.array([1.0, 0.0]), engine="tape")
    array([2., 0.])
    >>> cyad.pullback(lambda x: x[0] * x[1], x, 1.0)
    array([2., 1.])

    A tuple of cotangents is a batch, answered by a tuple:

    >>> cyad.pullback(lambda x: x ** 2, x, (np.array([1.0, 0.0]), np.array([0.0, 1.0])),
    ...               engine="tape")
    (array([2., 0.]), array([0., 4.]))
    """
    return _operate(PULLBACK, 0, f, x, dy, y, prep, out, chunk, engine, workers, False,
                    args, argnums, has_aux, False)


def value_and_pullback(f, x, dy, *args, y=None, prep=None, out=None, chunk=None, engine=None,
                       workers=None, argnums=0, has_aux=False):
    """f(x) and the vector-Jacobian product dy @ J(x).

    Parameters
    ----------
    f, x, dy, y, prep, chunk, engine, workers
        As for `pullback`.
    out : tuple, optional
        A pair ``(value_out, pullback_out)`` (``pullback_out`` a tuple for a batch),
        written in place and returned.
    %(arguments)s

    Returns
    -------
    value : ndarray or float
        f(x); in the two-argument form, y itself.
    pullback : ndarray or float, or tuple of ndarray
        dy @ J(x), as `pullback` returns it.

    Raises
    ------
    ValueError
        If the arguments do not fit ``prep``, ``y`` or ``out``
        (see `pullback`).
    TypeError
        If x is not real or f drops a derivative (see `pullback`).
    %(raises_call)s

    Examples
    --------
    >>> cyad.value_and_pullback(lambda x: x ** 3, 2.0, 1.0, engine="tape")
    (8.0, 12.0)
    """
    return _operate(PULLBACK, WITH_VALUE, f, x, dy, y, prep, out, chunk, engine, workers, False,
                    args, argnums, has_aux, False)


# -- derivative ------------------------------------------------------------------------

def prepare_derivative(f, x, *args, y=None, chunk=None, engine=None, holomorphic=False, argnums=0,
                       has_aux=False):
    """Prepare `derivative` and `value_and_derivative` of f at a scalar x.

    Parameters
    ----------
    %(f)s
    %(x_scalar_prepared)s
    %(y)s
    %(chunk_one)s
    %(engine_prepare)s
    %(holomorphic)s
    %(arguments)s

    Returns
    -------
    %(returns_prep)s

    Raises
    ------
    ValueError
        If x is empty, ``chunk`` is not a positive integer, or x is not a scalar.
    %(raises_prepare_type)s

    Examples
    --------
    >>> def f(y, t):
    ...     y[0] = t ** 2
    ...     y[1] = 3.0 * t
    >>> y, out = np.zeros(2), np.empty(2)
    >>> prep = cyad.prepare_derivative(f, 1.0, y=y)
    >>> cyad.derivative(f, 2.0, y=y, prep=prep, out=out)
    array([4., 3.])
    >>> y
    array([4., 6.])
    """
    return _prepare_call(DERIVATIVE, f, x, None, y, chunk, engine, None, holomorphic,
                         args, argnums, has_aux, False)


def derivative(f, x, *args, y=None, prep=None, out=None, chunk=None, engine=None,
               holomorphic=False, argnums=0, has_aux=False):
    """The derivative df/dx at a scalar x, shaped like f(x).

    Parameters
    ----------
    %(f)s
    x : float or 0-d ndarray
        Where to differentiate.
    %(y)s
    %(prep)s
    %(out_result)s
    %(chunk_one)s
    %(engine)s
    %(holomorphic)s
    %(arguments)s

    Returns
    -------
    ndarray or float
        df/dx in x's dtype; a float when f is scalar-valued and no ``out=`` is given.

    Raises
    ------
    %(raises_value)s
        Also if x is not a scalar (use `pushforward` or `jacobian`).
    %(raises_type)s
    %(raises_call)s

    See Also
    --------
    value_and_derivative, prepare_derivative, second_derivative

    Examples
    --------
    >>> cyad.derivative(np.sin, 0.0)
    1.0
    >>> cyad.derivative(lambda t: t * np.arange(3.0), 1.0)
    array([0., 1., 2.])
    """
    return _operate(DERIVATIVE, 0, f, x, None, y, prep, out, chunk, engine, None, holomorphic,
                    args, argnums, has_aux, False)


def value_and_derivative(f, x, *args, y=None, prep=None, out=None, chunk=None, engine=None,
                         holomorphic=False, argnums=0, has_aux=False):
    """f(x) and the derivative df/dx at a scalar x.

    Parameters
    ----------
    f, x, y, prep, chunk, engine, holomorphic
        As for `derivative`.
    out : tuple, optional
        A pair ``(value_out, derivative_out)``, written in place and returned.
    %(arguments)s

    Returns
    -------
    value : ndarray or float
        f(x); in the two-argument form, y itself.
    derivative : ndarray or float
        df/dx, as `derivative` returns it.

    Raises
    ------
    ValueError
        If the arguments do not fit ``prep``, ``y`` or ``out``, or x is not a scalar
        (see `derivative`).
    TypeError
        If x is not real or f drops a derivative (see `derivative`).
    %(raises_call)s

    Examples
    --------
    >>> cyad.value_and_derivative(np.exp, 0.0)
    (1.0, 1.0)
    """
    return _operate(DERIVATIVE, WITH_VALUE, f, x, None, y,
                    prep, out, chunk, engine, None, holomorphic, args, argnums, has_aux, False)


# -- gradient --------------------------------------------------------------------------

def prepare_gradient(f, x, *args, y=None, chunk=None, engine=None, workers=None, holomorphic=False,
                     argnums=0, has_aux=False):
    """Prepare `gradient` and `value_and_gradient` of a scalar-valued f at inputs shaped like x.

    Parameters
    ----------
    %(f_scalar)s
    %(x_prepared)s
    %(y)s
    %(chunk_inputs)s
    %(engine_prepare)s
    %(workers)s
    %(holomorphic)s
    %(arguments)s

    Returns
    -------
    %(returns_prep)s

    Raises
    ------
    ValueError
        If x is empty, ``chunk`` is not a positive integer, or a two-argument f's y
        is not 0-d.
    %(raises_prepare_type)s

    Examples
    --------
    >>> def f(x):
    ...     return np.sum(x ** 2)
    >>> prep = cyad.prepare_gradient(f, np.zeros(3))
    >>> out = np.empty(3)
    >>> cyad.gradient(f, np.array([1.0, 2.0, 3.0]), prep=prep, out=out)
    array([2., 4., 6.])
    """
    return _prepare_call(GRADIENT, f, x, None, y, chunk, engine, workers, holomorphic,
                         args, argnums, has_aux, False)


def gradient(f, x, *args, y=None, prep=None, out=None, chunk=None, engine=None, workers=None,
             holomorphic=False, argnums=0, has_aux=False):
    """The gradient of a scalar-valued f, shaped like x.

    Parameters
    ----------
    %(f_scalar)s
    %(x_at)s
    %(y)s
    %(prep)s
    out : ndarray, optional
        Buffer of x's shape and dtype, written in place and returned.
    %(chunk_inputs)s
    %(engine)s
    %(workers)s
    %(holomorphic)s
    %(arguments)s

    Returns
    -------
    ndarray
        The gradient, of x's shape and dtype.

    Raises
    ------
    %(raises_value)s
        Also if f is not scalar-valued (use `jacobian`).
    %(raises_type)s
    %(raises_call)s

    See Also
    --------
    value_and_gradient, prepare_gradient, hessian

    Examples
    --------
    >>> cyad.gradient(lambda x: np.sum(x ** 2), np.array([1.0, 2.0, 3.0]))
    array([2., 4., 6.])
    """
    return _operate(GRADIENT, 0, f, x, None, y, prep, out, chunk, engine, workers, holomorphic,
                    args, argnums, has_aux, False)


def value_and_gradient(f, x, *args, y=None, prep=None, out=None, chunk=None, engine=None,
                       workers=None, holomorphic=False, argnums=0, has_aux=False):
    """f(x) as a float, and the gradient of the scalar-valued f.

    Parameters
    ----------
    f, x, y, prep, chunk, engine, workers, holomorphic
        As for `gradient`.
    out : tuple, optional
        A pair ``(value_out, gradient_out)`` with ``value_out`` a 0-d array, written in
        place and returned.
    %(arguments)s

    Returns
    -------
    value : float
        f(x).
    gradient : ndarray
        The gradient, of x's shape and dtype.

    Raises
    ------
    ValueError
        If the arguments do not fit ``prep``, ``y`` or ``out``, or f is not scalar-valued
        (see `gradient`).
    TypeError
        If x is not real or f drops a derivative (see `gradient`).
    %(raises_call)s

    Examples
    --------
    >>> cyad.value_and_gradient(lambda x: x @ x, np.array([1.0, 2.0]))
    (5.0, array([2., 4.]))
    """
    return _operate(GRADIENT, WITH_VALUE, f, x, None, y,
                    prep, out, chunk, engine, workers, holomorphic, args, argnums, has_aux, False)


# -- jacobian --------------------------------------------------------------------------

def prepare_jacobian(f, x, *args, y=None, chunk=None, engine=None, workers=None, holomorphic=False,
                     argnums=0, has_aux=False, flat=False):
    """Prepare `jacobian` and `value_and_jacobian` of f at inputs shaped like x.

    Parameters
    ----------
    %(f)s
    %(x_prepared)s
    %(y)s
    %(chunk_inputs)s
    %(engine_prepare)s
    %(workers)s
    %(holomorphic)s
    %(arguments)s
    %(flat)s

    Returns
    -------
    %(returns_prep)s

    Raises
    ------
    ValueError
        If x is empty or ``chunk`` is not a positive integer.
    %(raises_prepare_type)s

    Examples
    --------
    >>> def f(x):
    ...     return 3.0 * x
    >>> prep = cyad.prepare_jacobian(f, np.zeros(2))
    >>> cyad.jacobian(f, np.array([1.0, 2.0]), prep=prep)
    array([[3., 0.],
           [0., 3.]])
    """
    return _prepare_call(JACOBIAN, f, x, None, y, chunk, engine, workers, holomorphic,
                         args, argnums, has_aux, flat)


def jacobian(f, x, *args, y=None, prep=None, out=None, chunk=None, engine=None, workers=None,
             holomorphic=False, argnums=0, has_aux=False, flat=False):
    """The Jacobian of f at x, of shape ``f(x).shape + x.shape``.

    Parameters
    ----------
    %(f)s
    %(x_at)s
    %(y)s
    %(prep)s
    out : ndarray, optional
        Buffer of exactly the Jacobian's shape and dtype, written in place and returned.
    %(chunk_inputs)s
    %(engine)s
    %(workers)s
    %(holomorphic)s
    %(arguments)s
    %(flat)s

    Returns
    -------
    ndarray
        The Jacobian, in x's dtype.

    Raises
    ------
    %(raises_value)s
    %(raises_type)s
    %(raises_call)s

    See Also
    --------
    value_and_jacobian, prepare_jacobian, pushforward

    Examples
    --------
    >>> cyad.jacobian(lambda x: x ** 2, np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    return _operate(JACOBIAN, 0, f, x, None, y, prep, out, chunk, engine, workers, holomorphic,
                    args, argnums, has_aux, flat)


def value_and_jacobian(f, x, *args, y=None, prep=None, out=None, chunk=None, engine=None,
                       workers=None, holomorphic=False, argnums=0, has_aux=False, flat=False):
    """f(x) and the Jacobian of f at x.

    Parameters
    ----------
    f, x, y, prep, chunk, engine, workers, holomorphic
        As for `jacobian`.
    out : tuple, optional
        A pair ``(value_out, jacobian_out)``, written in place and returned.
    %(arguments)s
    %(flat)s

    Returns
    -------
    value : ndarray or float
        f(x) (a float for a scalar-valued f); in the two-argument form, y itself.
    jacobian : ndarray
        The Jacobian, of shape ``f(x).shape + x.shape``.

    Raises
    ------
    ValueError
        If the arguments do not fit ``prep``, ``y`` or ``out``
        (see `jacobian`).
    TypeError
        If x is not real or f drops a derivative (see `jacobian`).
    %(raises_call)s

    Examples
    --------
    >>> value, J = cyad.value_and_jacobian(lambda x: 2.0 * x, np.array([1.0, 2.0]))
    >>> value
    array([2., 4.])
    >>> np.allclose(J, 2.0 * np.eye(2))
    True
    """
    return _operate(JACOBIAN, WITH_VALUE, f, x, None, y,
                    prep, out, chunk, engine, workers, holomorphic, args, argnums, has_aux, flat)


# -- second order ------------------------------------------------------------------------

def prepare_second_derivative(f, x, *args, y=None, chunk=None, engine=None, holomorphic=False,
                              argnums=0, has_aux=False):
    """Prepare `second_derivative` and `value_derivative_and_second_derivative` of f at a
    scalar x.

    Parameters
    ----------
    %(f)s
    %(x_scalar_prepared)s
    %(y)s
    %(chunk_one)s
    %(engine_prepare)s
    %(holomorphic)s
    %(arguments)s

    Returns
    -------
    %(returns_prep)s

    Raises
    ------
    ValueError
        If x is empty, ``chunk`` is not a positive integer, or x is not a scalar.
    %(raises_prepare_type)s

    Examples
    --------
    >>> def f(x):
    ...     return x ** 3
    >>> prep = cyad.prepare_second_derivative(f, 0.0)
    >>> cyad.second_derivative(f, 2.0, prep=prep)
    12.0
    """
    return _prepare_call(SECOND_DERIVATIVE, f, x, None, y, chunk, engine, None, holomorphic,
                         args, argnums, has_aux, False)


def second_derivative(f, x, *args, y=None, prep=None, out=None, chunk=None, engine=None,
                      holomorphic=False, argnums=0, has_aux=False):
    """The second derivative d2f/dx2 at a scalar x, shaped like f(x).

    Parameters
    ----------
    f : callable or FunctionWrapper
        ``f(x)``, or ``f(y, x)`` writing into y when ``y=`` is given. A C function needs
        a second-order function of cyad's signature.
    x : float or 0-d ndarray
        Where to differentiate.
    %(y)s
    %(prep)s
    %(out_result)s
    %(chunk_one)s
    %(engine)s
    %(holomorphic)s
    %(arguments)s

    Returns
    -------
    ndarray or float
        d2f/dx2 in x's dtype; a float when f is scalar-valued and no ``out=`` is given.

    Raises
    ------
    %(raises_value)s
        Also if x is not a scalar (use `hvp` or `hessian`).
    %(raises_type)s
    %(raises_call)s

    See Also
    --------
    value_derivative_and_second_derivative, prepare_second_derivative, derivative

    Examples
    --------
    >>> cyad.second_derivative(lambda x: x ** 3, 2.0)
    12.0
    """
    return _operate(SECOND_DERIVATIVE, 0, f, x, None, y,
                    prep, out, chunk, engine, None, holomorphic, args, argnums, has_aux, False)


def value_derivative_and_second_derivative(f, x, *args, y=None, prep=None, out=None, chunk=None,
                                           engine=None, holomorphic=False, argnums=0,
                                           has_aux=False):
    """f(x), df/dx and d2f/dx2 at a scalar x.

    Parameters
    ----------
    f, x, y, prep, chunk, engine, holomorphic
        As for `second_derivative`.
    out : tuple, optional
        A triple ``(value_out, derivative_out, second_derivative_out)``, written in place
        and returned.
    %(arguments)s

    Returns
    -------
    value : ndarray or float
        f(x); in the two-argument form, y itself.
    derivative : ndarray or float
        df/dx.
    second_derivative : ndarray or float
        d2f/dx2.

    Raises
    ------
    ValueError
        If the arguments do not fit ``prep``, ``y`` or ``out``, or x is not a scalar
        (see `second_derivative`).
    TypeError
        If x is not real or f drops a derivative (see `second_derivative`).
    %(raises_call)s

    Examples
    --------
    >>> cyad.value_derivative_and_second_derivative(lambda x: x ** 3, 2.0)
    (8.0, 12.0, 12.0)
    """
    return _operate(SECOND_DERIVATIVE, WITH_VALUE | WITH_FIRST, f, x, None, y,
                    prep, out, chunk, engine, None, holomorphic, args, argnums, has_aux, False)


def prepare_hvp(f, x, v, *args, y=None, chunk=None, engine=None, workers=None, holomorphic=False,
                argnums=0, has_aux=False):
    """Prepare `hvp` and `gradient_and_hvp` of a scalar-valued f at inputs shaped like x.

    Parameters
    ----------
    %(f_scalar)s
    %(x_prepared)s
    v : array_like or tuple of them
        A tangent shaped like x, or a tuple of tangents (a batch of that size).
    %(y)s
    %(chunk_hvp)s
    %(engine_prepare)s
    %(workers)s
    %(holomorphic)s
    %(arguments)s

    Returns
    -------
    %(returns_prep)s

    Raises
    ------
    ValueError
        If x is empty, ``chunk`` is not a positive integer, or a two-argument f's y
        is not 0-d.
    %(raises_prepare_type)s

    Examples
    --------
    >>> def f(x):
    ...     return np.sum(x ** 3)
    >>> x, v = np.array([1.0, 2.0]), np.array([1.0, 1.0])
    >>> prep = cyad.prepare_hvp(f, x, v)
    >>> cyad.hvp(f, x, v, prep=prep)
    array([ 6., 12.])
    """
    return _prepare_call(HVP, f, x, v, y, chunk, engine, workers, holomorphic,
                         args, argnums, has_aux, False)


def hvp(f, x, v, *args, y=None, prep=None, out=None, chunk=None, engine=None, workers=None,
        holomorphic=False, argnums=0, has_aux=False):
    """The Hessian-vector product H(x) @ v of a scalar-valued f, shaped like x.

    Parameters
    ----------
    %(f_scalar)s
        A C function needs a second-order function of cyad's signature.
    x : array_like
        Where to differentiate.
    v : array_like or tuple of them
        A tangent shaped like x, or a tuple of tangents (a batch, answered by a tuple).
    %(y)s
    %(prep)s
    out : ndarray or tuple of ndarray, optional
        Buffer of x's shape and dtype (a tuple of them for a batch), written in place and
        returned.
    %(chunk_hvp)s
    %(engine)s
    %(workers)s
    %(holomorphic)s
    %(arguments)s

    Returns
    -------
    ndarray or tuple of ndarray
        H(x) @ v, of x's shape and dtype; a tuple for a batch.

    Raises
    ------
    %(raises_value)s
        Also if f is not scalar-valued.
    %(raises_type)s
    %(raises_call)s

    See Also
    --------
    gradient_and_hvp, prepare_hvp, hessian

    Examples
    --------
    >>> f = lambda x: np.sum(x ** 3)            # H(x) = diag(6 x)
    >>> cyad.hvp(f, np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    array([ 6., 12.])
    """
    return _operate(HVP, 0, f, x, v, y, prep, out, chunk, engine, workers, holomorphic,
                    args, argnums, has_aux, False)


def gradient_and_hvp(f, x, v, *args, y=None, prep=None, out=None, chunk=None, engine=None,
                     workers=None, holomorphic=False, argnums=0, has_aux=False):
    """The gradient of a scalar-valued f and the Hessian-vector product H(x) @ v.

    Parameters
    ----------
    f, x, v, y, prep, chunk, engine, workers, holomorphic
        As for `hvp`.
    out : tuple, optional
        A pair ``(gradient_out, hvp_out)`` (``hvp_out`` a tuple for a batch), written in
        place and returned.
    %(arguments)s

    Returns
    -------
    gradient : ndarray
        The gradient, of x's shape and dtype.
    hvp : ndarray or tuple of ndarray
        H(x) @ v, as `hvp` returns it.

    Raises
    ------
    ValueError
        If the arguments do not fit ``prep``, ``y`` or ``out``, or f is not scalar-valued
        (see `hvp`).
    TypeError
        If x is not real or f drops a derivative (see `hvp`).
    %(raises_call)s

    Examples
    --------
    >>> f = lambda x: np.sum(x ** 3)
    >>> cyad.gradient_and_hvp(f, np.array([1.0, 2.0]), np.array([1.0, 1.0]))
    (array([ 3., 12.]), array([ 6., 12.]))
    """
    return _operate(HVP, WITH_FIRST, f, x, v, y, prep, out, chunk, engine, workers, holomorphic,
                    args, argnums, has_aux, False)


def prepare_hessian(f, x, *args, y=None, chunk=None, engine=None, workers=None, holomorphic=False,
                    argnums=0, has_aux=False, flat=False):
    """Prepare `hessian` and `value_gradient_and_hessian` of a scalar-valued f at inputs
    shaped like x.

    Parameters
    ----------
    %(f_scalar)s
    %(x_prepared)s
    %(y)s
    %(chunk_hessian)s
    %(engine_prepare)s
    %(workers)s
    %(holomorphic)s
    %(arguments)s
    %(flat)s

    Returns
    -------
    %(returns_prep)s

    Raises
    ------
    ValueError
        If x is empty, ``chunk`` is not a positive integer, or a two-argument f's y
        is not 0-d.
    %(raises_prepare_type)s

    Examples
    --------
    >>> def f(x):
    ...     return x[0] ** 2 * x[1]
    >>> prep = cyad.prepare_hessian(f, np.zeros(2))
    >>> prep.evaluations
    1
    >>> cyad.hessian(f, np.array([1.0, 2.0]), prep=prep)
    array([[4., 2.],
           [2., 0.]])
    """
    return _prepare_call(HESSIAN, f, x, None, y, chunk, engine, workers, holomorphic,
                         args, argnums, has_aux, flat)


def hessian(f, x, *args, y=None, prep=None, out=None, chunk=None, engine=None, workers=None,
            holomorphic=False, argnums=0, has_aux=False, flat=False):
    """The Hessian of a scalar-valued f, of shape ``x.shape + x.shape``.

    Parameters
    ----------
    %(f_scalar)s
        A C function needs a second-order function of cyad's signature.
    x : array_like
        Where to differentiate.
    %(y)s
    %(prep)s
    out : ndarray, optional
        Buffer of exactly the Hessian's shape and dtype, written in place and returned.
    %(chunk_hessian)s
    %(engine)s
    %(workers)s
    %(holomorphic)s
    %(arguments)s
    %(flat)s

    Returns
    -------
    ndarray
        The (symmetric) Hessian, in x's dtype.

    Raises
    ------
    %(raises_value)s
        Also if f is not scalar-valued.
    %(raises_type)s
    %(raises_call)s

    See Also
    --------
    value_gradient_and_hessian, prepare_hessian, hvp

    Examples
    --------
    >>> cyad.hessian(lambda x: x[0] ** 2 * x[1], np.array([1.0, 2.0]))
    array([[4., 2.],
           [2., 0.]])
    """
    return _operate(HESSIAN, 0, f, x, None, y, prep, out, chunk, engine, workers, holomorphic,
                    args, argnums, has_aux, flat)


def value_gradient_and_hessian(f, x, *args, y=None, prep=None, out=None, chunk=None, engine=None,
                               workers=None, holomorphic=False, argnums=0, has_aux=False,
                               flat=False):
    """f(x) as a float, the gradient and the Hessian of a scalar-valued f.

    Parameters
    ----------
    f, x, y, prep, chunk, engine, workers, holomorphic
        As for `hessian`.
    out : tuple, optional
        A triple ``(value_out, gradient_out, hessian_out)`` with ``value_out`` a 0-d array,
        written in place and returned.
    %(arguments)s
    %(flat)s

    Returns
    -------
    value : float
        f(x).
    gradient : ndarray
        The gradient, of x's shape.
    hessian : ndarray
        The Hessian, of shape ``x.shape + x.shape``.

    Raises
    ------
    ValueError
        If the arguments do not fit ``prep``, ``y`` or ``out``, or f is not scalar-valued
        (see `hessian`).
    TypeError
        If x is not real or f drops a derivative (see `hessian`).
    %(raises_call)s

    Examples
    --------
    >>> value, g, H = cyad.value_gradient_and_hessian(lambda x: x[0] ** 2 * x[1],
    ...                                               np.array([1.0, 2.0]))
    >>> value, g
    (2.0, array([4., 1.]))
    >>> H
    array([[4., 2.],
           [2., 0.]])
    """
    return _operate(HESSIAN, WITH_VALUE | WITH_FIRST, f, x, None, y,
                    prep, out, chunk, engine, workers, holomorphic, args, argnums, has_aux, flat)


# -- 0-d results are returned as floats when the caller gave no buffer ------------------

cdef object _scalar_result(object r, object out):
    if out is None and isinstance(r, np.ndarray) and (<object>r).ndim == 0:
        return float(r)
    return r


cdef object _scalar_tuple(tuple r, object out):
    if out is not None:
        return out
    return tuple([_scalar_result(x, None) for x in r])


# -- the docstrings' shared fragments (cyad/_docstrings.py) -------------------------------

for _family, _prepare, _operator, _value_operator, _order, _what in [
        (PUSHFORWARD, prepare_pushforward, pushforward, value_and_pushforward, "first-order",
         None),
        (PULLBACK, prepare_pullback, pullback, value_and_pullback, "first-order", None),
        (DERIVATIVE, prepare_derivative, derivative, value_and_derivative, "first-order",
         "derivative"),
        (GRADIENT, prepare_gradient, gradient, value_and_gradient, "first-order", None),
        (JACOBIAN, prepare_jacobian, jacobian, value_and_jacobian, "first-order", None),
        (SECOND_DERIVATIVE, prepare_second_derivative, second_derivative,
         value_derivative_and_second_derivative, "second-order", "second derivative"),
        (HVP, prepare_hvp, hvp, gradient_and_hvp, "second-order", None),
        (HESSIAN, prepare_hessian, hessian, value_gradient_and_hessian, "second-order", None)]:
    _default = _engines.default_text(_FAMILY_NAMES[_family])
    _docstrings.fill(_prepare, operator=_operator.__name__,
                     value_operator=_value_operator.__name__, order=_order, what=_what,
                     default=_default)
    _docstrings.fill(_operator, prepare=_prepare.__name__, what=_what, default=_default)
    _docstrings.fill(_value_operator, prepare=_prepare.__name__, what=_what, default=_default)
del _family, _prepare, _operator, _value_operator, _order, _what, _default


# each family's operators by what they return besides the result (WITH_VALUE, WITH_FIRST),
# and its prepare_* function: what the complex and the arguments layers call
OPERATORS = {
    "pushforward": {0: pushforward, WITH_VALUE: value_and_pushforward},
    "pullback": {0: pullback, WITH_VALUE: value_and_pullback},
    "derivative": {0: derivative, WITH_VALUE: value_and_derivative},
    "gradient": {0: gradient, WITH_VALUE: value_and_gradient},
    "jacobian": {0: jacobian, WITH_VALUE: value_and_jacobian},
    "second_derivative": {0: second_derivative,
                          WITH_VALUE | WITH_FIRST: value_derivative_and_second_derivative},
    "hvp": {0: hvp, WITH_FIRST: gradient_and_hvp},
    "hessian": {0: hessian, WITH_VALUE | WITH_FIRST: value_gradient_and_hessian},
}
PREPARE = {"pushforward": prepare_pushforward, "pullback": prepare_pullback,
           "derivative": prepare_derivative, "gradient": prepare_gradient,
           "jacobian": prepare_jacobian, "hvp": prepare_hvp,
           "second_derivative": prepare_second_derivative, "hessian": prepare_hessian}

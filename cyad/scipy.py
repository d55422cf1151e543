"""Derivative callables for SciPy's solvers, prepared once and reused on every call.

Each function here turns a user's function into the callable a SciPy solver takes:

=================================  ==============================================================
``gradient(fun)``                  ``jac=`` of `scipy.optimize.minimize`
``value_and_gradient(fun)``        ``fun=`` of ``minimize(..., jac=True)`` (f evaluated once)
``hessian(fun)``                   ``hess=`` of ``minimize``; with ``sparse=True`` a sparse
                                   Hessian, for ``method="trust-constr"``
``hessp(fun)``                     ``hessp=`` of ``minimize``
``constraint_hessian(fun)``        ``hess=`` of a ``NonlinearConstraint``: ``hess(x, v)``, the
                                   constraints' Hessians weighted by v (dense or sparse)
``jacobian(fun)``                  ``jac=`` of `scipy.optimize.least_squares` and
                                   `~scipy.optimize.root`; with ``sparse=True`` a sparse
                                   Jacobian, for ``least_squares(tr_solver="lsmr")`` and
                                   ``NonlinearConstraint(jac=)``
``ode_jacobian(fun)``              ``jac=`` of `scipy.integrate.solve_ivp` for ``fun(t, y)``;
                                   with ``sparse=True`` a CSC Jacobian, for BDF and Radau
``ode_function(rhs)``              ``fun=`` of ``solve_ivp`` for an in-place ``rhs(dydt, t, y)``
``jac_sparsity(fun, x0)``          ``jac_sparsity=`` of ``least_squares``: the Jacobian's
                                   pattern, for SciPy's own finite differences
``ode_jac_sparsity(fun, t0, y0)``  ``jac_sparsity=`` of ``solve_ivp`` (BDF, Radau)
``check_derivatives``              cyad's derivative next to SciPy's finite differences
=================================  ==============================================================

The callables take the solver's extra arguments like SciPy passes them (``jac(x, *args)``,
``jac(t, y, *args)``), and hand them to cyad's operators as f's own arguments: t and the
float arrays and numbers among args are inputs of the prep, so that a tape records fun once
however they change; an int, a string or another object among them prepares anew when it
changes (see `cyad.gradient`'s arguments). Each callable prepares its cyad operator once, on
its first call (or from an ``x0`` given up front), and reuses the prep on every later call:
a call allocates its result array and whatever the user's function allocates, nothing else
(with extra args or t, also a few small objects: the tuple of the arguments' values each
evaluation of fun reads, the call's tuple of args). The derivatives are taken in float64,
SciPy's dtype. SciPy itself is imported only by `check_derivatives` and the sparse forms,
so cyad depends on NumPy alone.

The sparse forms (``sparse=True``) prepare cyad's sparse operator (`cyad.sparse_jacobian`,
`cyad.sparse_hessian`): the pattern is detected at the first x (or given as ``sparsity=``;
a call where fun takes a branch that leaves it raises ValueError), colored, and every
call evaluates one product per color and gathers them into a ``scipy.sparse`` array, in
the format the solver converts to (CSR for ``least_squares`` and ``trust-constr``, CSC
for BDF and Radau), so that its conversion copies nothing. The solvers keep what a call
returns (BDF and Radau hold J over many steps; ``least_squares`` scales its data in place
and returns it as ``res.jac``): each call returns a new array, with data and index arrays
of its own, copied from the prep's result (one copy of each; a change to its structure,
such as ``eliminate_zeros()``, cannot reach the prep). The patterns for SciPy's own
finite differences (`jac_sparsity`, `ode_jac_sparsity`) are `cyad.jacobian_sparsity`'s.

Like a prep, a callable serves one call at a time (it holds the
current arguments and buffers besides its prep): one called again while a call
runs - from another thread, or from inside fun - raises RuntimeError.
"""
import collections
import threading

import numpy as np

from cyad import _operators
from cyad._arguments.operators import ArgumentsChanged as _StaticChange
from cyad._sparse import operators as _sparse_operators
from cyad._engines import engine_type
from cyad._sparse.sparsity import jacobian_sparsity
from cyad._wrapper import FunctionWrapper

__all__ = [
    "DerivativeCheck",
    "check_derivatives",
    "constraint_hessian",
    "gradient",
    "hessian",
    "hessp",
    "jac_sparsity",
    "jacobian",
    "ode_function",
    "ode_jac_sparsity",
    "ode_jacobian",
    "value_and_gradient",
]

_FLOAT64 = np.dtype(np.float64)


def _float64(x):
    # x itself when SciPy passes what it always passes: a float64 ndarray
    if type(x) is np.ndarray and x.dtype is _FLOAT64:
        return x
    return np.asarray(x, dtype=np.float64)


def _busy(adapter):
    return RuntimeError(f"cyad.scipy: {adapter!r} is in use by another call (from another "
                        "thread, or from inside the function it differentiates); it serves one "
                        "call at a time: make one per thread")


class _Adapter:
    """A user's function ``fun(x, *args)`` and the prep of one cyad operator for it.

    The solver's extra arguments go to cyad's operator as f's own arguments: their float
    arrays and numbers are inputs of the prep (a tape copies their new values in at every
    call, as it copies x), while other arguments (ints, strings, objects) prepare anew when
    they change. A call with another count of them than the prep's prepares anew. A call
    holds the adapter's lock from its start, so a concurrent call is refused before it
    changes anything. (The operators are called without ``*args`` where there are none:
    a call spelled with ``*args`` and keywords builds a tuple and a dict.)
    """

    __slots__ = ("fun", "chunk", "engine", "prep", "_arity", "_lock")
    _operator = ""    # the prepare_<operator> function's suffix, for repr and errors

    def __init__(self, fun, x0=None, chunk=None, engine=None):
        if not (callable(fun) or isinstance(fun, FunctionWrapper)):
            raise TypeError(f"cyad.scipy: fun must be callable or a cyad.FunctionWrapper, not "
                            f"{type(fun).__name__}")
        engine_type(engine)     # an unknown engine is refused now, not at the first call
        self.fun = fun
        self.chunk = chunk
        self.engine = engine
        self.prep = None
        self._arity = 0
        self._lock = threading.Lock()
        if x0 is not None:
            self._prepare(_float64(x0), ())

    def _check(self, args):
        if args and isinstance(self.fun, FunctionWrapper):
            raise TypeError("cyad.scipy: a FunctionWrapper (a C function) takes no extra args; "
                            f"the solver passed {len(args)}")

    def _prepare(self, x, args, *tangent):
        prepare = getattr(_operators, "prepare_" + self._operator)
        self.prep = prepare(self.fun, x, *tangent, *args, chunk=self.chunk, engine=self.engine)
        self._arity = len(args)

    def _current_prep(self, x, args, *tangent):
        """The prep for this call: made now on the first call, or anew for another count
        of extra arguments."""
        self._check(args)
        if self.prep is None or len(args) != self._arity:
            self._prepare(x, args, *tangent)
        return self.prep

    def __call__(self, x, *args):
        if not self._lock.acquire(False):
            raise _busy(self)
        try:
            x = _float64(x)
            prep = self._current_prep(x, args)
            return self._apply(x, args, prep)
        finally:
            self._lock.release()

    def __repr__(self):
        name = getattr(self.fun, "__qualname__", None) or repr(self.fun)
        state = "prepared" if self.prep is not None else "not yet prepared"
        return f"<cyad.scipy.{type(self).__name__[1:]} of {name}, {state}>"


class _Gradient(_Adapter):
    __slots__ = ()
    _operator = "gradient"

    def _apply(self, x, args, prep):
        if args:
            return _operators.gradient(self.fun, x, *args, prep=prep)
        return _operators.gradient(self.fun, x, prep=prep)


class _ValueAndGradient(_Adapter):
    __slots__ = ("_value",)
    _operator = "gradient"

    def __init__(self, fun, x0=None, chunk=None, engine=None):
        self._value = np.zeros(())
        super().__init__(fun, x0, chunk, engine)

    def _apply(self, x, args, prep):
        g = np.empty_like(x, order="C")
        if args:
            _operators.value_and_gradient(self.fun, x, *args, prep=prep, out=(self._value, g))
        else:
            _operators.value_and_gradient(self.fun, x, prep=prep, out=(self._value, g))
        return float(self._value), g


class _Hessian(_Adapter):
    __slots__ = ()
    _operator = "hessian"

    def _apply(self, x, args, prep):
        if args:
            return _operators.hessian(self.fun, x, *args, prep=prep)
        return _operators.hessian(self.fun, x, prep=prep)


class _Hessp(_Adapter):
    __slots__ = ()
    _operator = "hvp"

    def __init__(self, fun, x0=None, chunk=None, engine=None):
        super().__init__(fun, None, chunk, engine)
        if x0 is not None:
            x0 = _float64(x0)
            self._prepare(x0, (), x0)

    def __call__(self, x, p, *args):
        if not self._lock.acquire(False):
            raise _busy(self)
        try:
            x = _float64(x)
            p = _float64(p)
            prep = self._current_prep(x, args, p)
            if args:
                return _operators.hvp(self.fun, x, p, *args, prep=prep)
            return _operators.hvp(self.fun, x, p, prep=prep)
        finally:
            self._lock.release()


class _Jacobian(_Adapter):
    __slots__ = ()
    _operator = "jacobian"

    def _apply(self, x, args, prep):
        if args:
            return _operators.jacobian(self.fun, x, *args, prep=prep)
        return _operators.jacobian(self.fun, x, prep=prep)


class _SparseAdapter(_Adapter):
    """An adapter whose prep is one of cyad's sparse preps: a new sparse array per call."""

    __slots__ = ("sparsity", "options", "_result")
    _operator = ""
    _format = "csr"     # what the solvers convert to: their conversion then copies nothing

    def __init__(self, fun, x0, sparsity, engine, options):
        self.sparsity = sparsity
        self.options = options
        self._result = None
        super().__init__(fun, x0, None, engine)

    def _prepare(self, x, args):
        prepare = getattr(_sparse_operators, "prepare_" + self._operator)
        self.prep = prepare(self.fun, x, *args, sparsity=self.sparsity, engine=self.engine,
                            format=self._format, **self.options)
        self._arity = len(args)
        self._result = self.prep.new_result()

    def _apply(self, x, args, prep):
        operator = getattr(_sparse_operators, self._operator)
        if not args:
            operator(self.fun, x, prep=prep, out=self._result)
        else:
            try:
                operator(self.fun, x, *args, prep=prep, out=self._result)
            except _StaticChange:
                # an argument that is not an array or a float changed: the pattern anew
                self._prepare(x, args)
                operator(self.fun, x, *args, prep=self.prep, out=self._result)
        # SciPy keeps the matrix (module docstring): a copy with index arrays of its own
        return self._result.copy()


class _SparseJacobian(_SparseAdapter):
    __slots__ = ()
    _operator = "sparse_jacobian"


class _SparseHessian(_SparseAdapter):
    __slots__ = ()
    _operator = "sparse_hessian"


def _weighted_sum(fun):
    # sum_i v_i fun_i(x): the Lagrangian of constraints fun with multipliers v
    def lagrangian(x, v):
        return np.sum(fun(x) * v)
    return lagrangian


class _ConstraintHessian:
    """sum_i v_i H_i(x), the constraints' Hessians weighted by the multipliers v: the
    Hessian of ``np.sum(fun(x) * v)`` in x, v an argument (an input of the prep)."""

    __slots__ = ("fun", "sparse", "sparsity", "chunk", "prep", "_lagrangian", "_result",
                 "_v_shape", "_lock")

    def __init__(self, fun, x0, v0, sparse, sparsity, chunk):
        if not callable(fun):
            raise TypeError(f"cyad.scipy: fun must be callable, not {type(fun).__name__}")
        if (x0 is None) != (v0 is None):
            raise TypeError("cyad.scipy: constraint_hessian prepares from x0 and v0 together")
        self.fun = fun
        self.sparse = bool(sparse)
        self.sparsity = sparsity
        self.chunk = chunk
        self.prep = None
        self._result = None
        self._lock = threading.Lock()
        self._lagrangian = _weighted_sum(fun)
        if x0 is not None:
            self._prepare(_float64(x0), _float64(v0))

    def _prepare(self, x, v):
        self._v_shape = v.shape
        if self.sparse:
            self.prep = _sparse_operators.prepare_sparse_hessian(
                self._lagrangian, x, v, sparsity=self.sparsity, format="csr")
            self._result = self.prep.new_result()
        else:
            self.prep = _operators.prepare_hessian(self._lagrangian, x, v, chunk=self.chunk)

    def __call__(self, x, v):
        if not self._lock.acquire(False):
            raise _busy(self)
        try:
            x = _float64(x)
            v = _float64(v)
            if self.prep is None:
                self._prepare(x, v)
            elif v.shape != self._v_shape:
                raise ValueError(f"cyad.scipy: v has shape {v.shape}; the first call's had "
                                 f"{self._v_shape}")
            if not self.sparse:
                return _operators.hessian(self._lagrangian, x, v, prep=self.prep)
            _sparse_operators.sparse_hessian(self._lagrangian, x, v, prep=self.prep,
                                             out=self._result)
            # trust-constr keeps the matrix: a copy with index arrays of its own
            return self._result.copy()
        finally:
            self._lock.release()

    def __repr__(self):
        name = getattr(self.fun, "__qualname__", None) or repr(self.fun)
        kind = "sparse " if self.sparse else ""
        state = "prepared" if self.prep is not None else "not yet prepared"
        return f"<cyad.scipy.{kind}constraint_hessian of {name}, {state}>"


def _y_first(fun, in_place):
    # fun with y before t: the sparse operators differentiate their first argument
    if in_place:
        def rhs(dydt, y, t, *args):
            return fun(dydt, t, y, *args)
        return rhs

    def y_first(y, t, *args):
        return fun(t, y, *args)
    return y_first


class _OdeJacobian:
    """The Jacobian of an ODE's right-hand side with respect to y: ``fun(t, y, *args)``
    differentiated in its argument 1, t and args inputs of the prep (as `_Adapter`'s)."""

    __slots__ = ("fun", "in_place", "sparse", "sparsity", "coloring", "chunk", "engine", "prep",
                 "_y_first", "_arity", "_dydt", "_result", "_lock")

    def __init__(self, fun, in_place=False, y0=None, chunk=None, engine=None, sparse=False,
                 sparsity=None, coloring="auto"):
        if isinstance(fun, FunctionWrapper):
            raise TypeError("cyad.scipy: ode_jacobian takes a Python function of (t, y); a "
                            "FunctionWrapper's C function has no t (use cyad.jacobian with a "
                            "prep for an autonomous C right-hand side)")
        if not callable(fun):
            raise TypeError(f"cyad.scipy: fun must be callable, not {type(fun).__name__}")
        engine_type(engine)
        self.fun = fun
        self.in_place = bool(in_place)
        self.sparse = bool(sparse)
        self.sparsity = sparsity
        self.coloring = coloring
        self._result = None
        self.chunk = chunk
        self.engine = engine
        self.prep = None
        self._arity = 0
        self._dydt = None
        self._lock = threading.Lock()     # one call at a time, as in _Adapter
        self._y_first = _y_first(fun, self.in_place)
        if y0 is not None:
            self._prepare(0.0, _float64(y0), ())

    def _prepare(self, t, y, args):
        if self.in_place:
            if y.ndim != 1:
                raise ValueError(f"cyad.scipy: y must be 1-D, not of shape {y.shape}")
            self._dydt = np.zeros(y.shape)
        if self.sparse:
            # x is f's first argument there: y first, t after it
            self.prep = _sparse_operators.prepare_sparse_jacobian(
                self._y_first, y, t, *args, y=self._dydt, sparsity=self.sparsity,
                coloring=self.coloring, engine=self.engine, format="csc")  # BDF's, Radau's
            self._result = self.prep.new_result()
        else:
            self.prep = _operators.prepare_jacobian(self.fun, t, y, *args, y=self._dydt,
                                                    argnums=1, chunk=self.chunk,
                                                    engine=self.engine)
        self._arity = len(args)

    def __call__(self, t, y, *args):
        if not self._lock.acquire(False):
            raise _busy(self)
        try:
            y = _float64(y)
            if type(t) is not float:
                t = float(t)        # (an int would be a static argument)
            if self.prep is None or len(args) != self._arity:
                self._prepare(t, y, args)
            if not self.sparse:
                if args:
                    return _operators.jacobian(self.fun, t, y, *args, y=self._dydt, argnums=1,
                                               prep=self.prep)
                return _operators.jacobian(self.fun, t, y, y=self._dydt, argnums=1,
                                           prep=self.prep)
            try:
                if args:
                    _sparse_operators.sparse_jacobian(self._y_first, y, t, *args, y=self._dydt,
                                                      prep=self.prep, out=self._result)
                else:
                    _sparse_operators.sparse_jacobian(self._y_first, y, t, y=self._dydt,
                                                      prep=self.prep, out=self._result)
            except _StaticChange:
                self._prepare(t, y, args)
                _sparse_operators.sparse_jacobian(self._y_first, y, t, *args, y=self._dydt,
                                                  prep=self.prep, out=self._result)
            # BDF and Radau keep J over many steps: a copy with index arrays of its own
            return self._result.copy()
        finally:
            self._lock.release()

    def __repr__(self):
        name = getattr(self.fun, "__qualname__", None) or repr(self.fun)
        form = "rhs(dydt, t, y)" if self.in_place else "fun(t, y)"
        kind = "sparse " if self.sparse else ""
        state = "prepared" if self.prep is not None else "not yet prepared"
        return f"<cyad.scipy.{kind}ode_jacobian of {name} as {form}, {state}>"


class _OdeFunction:
    """``fun(t, y, *args)`` returning a new dydt filled by ``rhs(dydt, t, y, *args)``."""

    __slots__ = ("rhs",)

    def __init__(self, rhs):
        if not callable(rhs):
            raise TypeError(f"cyad.scipy: rhs must be callable, not {type(rhs).__name__}")
        self.rhs = rhs

    def __call__(self, t, y, *args):
        dydt = np.empty(np.shape(y))
        self.rhs(dydt, t, y, *args)
        return dydt

    def __repr__(self):
        name = getattr(self.rhs, "__qualname__", None) or repr(self.rhs)
        return f"<cyad.scipy.ode_function of {name}>"


# -- public constructors ------------------------------------------------------------------

def gradient(fun, x0=None, *, chunk=None, engine=None):
    """The gradient of a scalar objective, as ``jac=`` of `scipy.optimize.minimize`.

    Parameters
    ----------
    fun : callable or cyad.FunctionWrapper
        The objective ``fun(x, *args)``, returning a scalar, written with NumPy operations
        (cyad calls it on dual arrays). A FunctionWrapper takes no extra args.
    x0 : array_like, optional
        Prepare now from an input of this shape; otherwise the first call prepares.
    chunk : int, optional
        Directions per evaluation of fun (cyad's default: all of them, within a budget).
    engine : str, optional
        The cyad engine that computes the derivatives (by default cyad's choice: the
        tape for a Python function, which hands it to the dual engine where it cannot
        record it; see `cyad.prepare_gradient`).

    Returns
    -------
    callable
        ``jac(x, *args)`` returning the gradient, a new float64 array shaped like x.

    Raises
    ------
    TypeError
        If fun is not callable, or a FunctionWrapper is given extra args.
    ValueError
        From a call whose x has another shape than the first, or if fun is not scalar-valued.
    RuntimeError
        From a call made while another call of the callable runs (from another thread, or
        from inside fun).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import minimize
    >>> import cyad.scipy
    >>> def f(x, a):
    ...     return np.sum((x - a) ** 2)
    >>> res = minimize(f, np.zeros(3), args=(2.0,), jac=cyad.scipy.gradient(f), method="BFGS")
    >>> np.round(res.x, 6)
    array([2., 2., 2.])
    """
    return _Gradient(fun, x0, chunk, engine)


def value_and_gradient(fun, x0=None, *, chunk=None, engine=None):
    """The objective and its gradient from one evaluation, for ``minimize(..., jac=True)``.

    Parameters
    ----------
    fun : callable or cyad.FunctionWrapper
        The objective ``fun(x, *args)``, returning a scalar.
    x0 : array_like, optional
        Prepare now from an input of this shape; otherwise the first call prepares.
    chunk : int, optional
        Directions per evaluation of fun.
    engine : str, optional
        The cyad engine that computes the derivatives (by default cyad's choice: the
        tape for a Python function, which hands it to the dual engine where it cannot
        record it; see `cyad.prepare_gradient`).

    Returns
    -------
    callable
        ``fg(x, *args)`` returning ``(value, gradient)``: a float and a new float64 array.

    Raises
    ------
    TypeError
        If fun is not callable, or a FunctionWrapper is given extra args.
    ValueError
        From a call whose x has another shape than the first, or if fun is not scalar-valued.
    RuntimeError
        From a call made while another call of the callable runs (from another thread, or
        from inside fun).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import minimize
    >>> import cyad.scipy
    >>> def f(x):
    ...     return np.sum(np.cosh(x - 1.0))
    >>> res = minimize(cyad.scipy.value_and_gradient(f), np.zeros(4), jac=True, method="BFGS")
    >>> np.round(res.x, 4), res.nfev == res.njev
    (array([1., 1., 1., 1.]), True)
    """
    return _ValueAndGradient(fun, x0, chunk, engine)


def hessian(fun, x0=None, *, sparse=False, sparsity=None, chunk=None, engine=None):
    """The Hessian of a scalar objective, as ``hess=`` of `scipy.optimize.minimize`.

    Parameters
    ----------
    fun : callable or cyad.FunctionWrapper
        The objective ``fun(x, *args)``, returning a scalar (a FunctionWrapper needs a
        second-order C function).
    x0 : array_like, optional
        Prepare now from an input of this shape; otherwise the first call prepares.
    sparse : bool, optional
        Return a sparse Hessian (a ``scipy.sparse.csr_array`` of shape (x.size, x.size)),
        for ``minimize(method="trust-constr")``: its pattern is detected at the first x
        (`cyad.hessian_sparsity`) unless given, and each call takes one Hessian-vector
        product per color of its star coloring (`cyad.sparse_hessian`).
    sparsity : sparse matrix or array_like of bool, optional
        With ``sparse=True``: the Hessian's pattern, instead of detecting it (required for
        a FunctionWrapper of C functions). It must contain every nonzero at every x.
    chunk : int, optional
        Directions per evaluation of fun, at each of the two levels (dense only).
    engine : str, optional
        The cyad engine that computes the derivatives (by default cyad's choice: the
        tape for a Python function, which hands it to the dual engine where it cannot
        record it; see `cyad.prepare_gradient`).

    Returns
    -------
    callable
        ``hess(x, *args)`` returning the Hessian, a new float64 array of shape
        ``x.shape + x.shape``, or with ``sparse=True`` a new CSR array.

    Raises
    ------
    TypeError
        If fun is not callable, a FunctionWrapper is given extra args, or sparsity= or
        chunk= does not fit sparse= (see `jacobian`).
    ValueError
        From a call whose x has another shape than the first, or if fun is not scalar-valued;
        with ``sparse=True``, if a given sparsity misses a nonzero of the detected pattern.
    RuntimeError
        From a call made while another call of the callable runs (from another thread, or
        from inside fun).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import minimize
    >>> import cyad.scipy
    >>> def f(x):
    ...     return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    >>> res = minimize(f, np.zeros(5), method="trust-exact",
    ...                jac=cyad.scipy.gradient(f), hess=cyad.scipy.hessian(f))
    >>> res.success, np.allclose(res.x, 1.0)
    (True, True)
    >>> hess = cyad.scipy.hessian(f, sparse=True)
    >>> res = minimize(f, np.zeros(50), method="trust-constr", jac=cyad.scipy.gradient(f),
    ...                hess=hess, options={"gtol": 1e-10})
    >>> np.allclose(res.x, 1.0, atol=1e-6), hess.prep.n_colors, hess(res.x).format
    (True, 3, 'csr')
    """
    if _sparse_form("hessian", sparse, sparsity, chunk):
        return _SparseHessian(fun, x0, sparsity, engine, {})
    return _Hessian(fun, x0, chunk, engine)


def hessp(fun, x0=None, *, chunk=None, engine=None):
    """The Hessian-vector product of a scalar objective, as ``hessp=`` of ``minimize``.

    Parameters
    ----------
    fun : callable or cyad.FunctionWrapper
        The objective ``fun(x, *args)``, returning a scalar (a FunctionWrapper needs a
        second-order C function).
    x0 : array_like, optional
        Prepare now from an input of this shape; otherwise the first call prepares.
    chunk : int, optional
        Basis directions per evaluation of fun.
    engine : str, optional
        The cyad engine that computes the derivatives (by default cyad's choice: the
        tape for a Python function, which hands it to the dual engine where it cannot
        record it; see `cyad.prepare_gradient`).

    Returns
    -------
    callable
        ``hessp(x, p, *args)`` returning H(x) @ p, a new float64 array shaped like x.

    Raises
    ------
    TypeError
        If fun is not callable, or a FunctionWrapper is given extra args.
    ValueError
        From a call whose x or p has another shape than the first call's x.
    RuntimeError
        From a call made while another call of the callable runs (from another thread, or
        from inside fun).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import minimize
    >>> import cyad.scipy
    >>> def f(x):
    ...     return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    >>> res = minimize(f, np.zeros(5), method="Newton-CG", jac=cyad.scipy.gradient(f),
    ...                hessp=cyad.scipy.hessp(f), options={"xtol": 1e-10})
    >>> np.allclose(res.x, 1.0)
    True
    """
    return _Hessp(fun, x0, chunk, engine)


def jacobian(fun, x0=None, *, sparse=False, sparsity=None, coloring="auto", chunk=None,
             engine=None):
    """The Jacobian of a residual function, as ``jac=`` of ``least_squares`` and ``root``.

    Parameters
    ----------
    fun : callable or cyad.FunctionWrapper
        The residuals ``fun(x, *args)``, returning an array (usually 1-D).
    x0 : array_like, optional
        Prepare now from an input of this shape; otherwise the first call prepares.
    sparse : bool, optional
        Return a sparse Jacobian (a ``scipy.sparse.csr_array`` of shape
        (fun(x).size, x.size)), for ``least_squares(tr_solver="lsmr")`` (its
        ``"exact"`` solver takes dense Jacobians only) and the ``jac=`` of a
        ``NonlinearConstraint`` of
        ``minimize(method="trust-constr")``: its pattern is detected at the first x
        (`cyad.jacobian_sparsity`) unless given, and each call evaluates one product per
        color (`cyad.sparse_jacobian`).
    sparsity : sparse matrix or array_like of bool, optional
        With ``sparse=True``: the Jacobian's pattern, instead of detecting it (required for
        a FunctionWrapper of C functions). It must contain every nonzero at every x.
    coloring : {"auto", "column", "row", "bidirectional"}, optional
        With ``sparse=True``: how the products are grouped (see
        `cyad.prepare_sparse_jacobian`).
    chunk : int, optional
        Directions per evaluation of fun (dense only).
    engine : str, optional
        The cyad engine that computes the derivatives (default ``"dual"``; a sparse
        Jacobian's pullbacks, with a row coloring, the tape; see `cyad.prepare_gradient`).

    Returns
    -------
    callable
        ``jac(x, *args)`` returning the Jacobian, a new float64 array of shape
        ``fun(x).shape + x.shape``, or with ``sparse=True`` a new CSR array.

    Raises
    ------
    TypeError
        If fun is not callable, a FunctionWrapper is given extra args, sparsity= or
        coloring= is given without ``sparse=True``, or chunk= with it.
    ValueError
        From a call whose x has another shape than the first; with ``sparse=True``, if a
        given sparsity misses a nonzero of the detected pattern, or coloring is unknown.
    RuntimeError
        From a call made while another call of the callable runs (from another thread, or
        from inside fun).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import least_squares, root
    >>> import cyad.scipy
    >>> t = np.linspace(0.0, 3.0, 20)
    >>> data = 2.5 * np.exp(-1.3 * t)
    >>> def residuals(p, t, data):
    ...     return p[0] * np.exp(-p[1] * t) - data
    >>> fit = least_squares(residuals, [1.0, 1.0], jac=cyad.scipy.jacobian(residuals),
    ...                     args=(t, data))
    >>> np.round(fit.x, 6)
    array([2.5, 1.3])
    >>> def g(x):
    ...     return np.concatenate([x[:1] ** 2 + x[1:] ** 2 - 4.0, x[:1] - x[1:]])
    >>> np.round(root(g, [1.0, 1.5], jac=cyad.scipy.jacobian(g)).x, 6)
    array([1.414214, 1.414214])
    >>> def broyden(x):
    ...     y = (3.0 - 2.0 * x) * x + 1.0
    ...     y[1:] -= x[:-1]
    ...     y[:-1] -= 2.0 * x[1:]
    ...     return y
    >>> jac = cyad.scipy.jacobian(broyden, sparse=True)
    >>> sol = least_squares(broyden, -np.ones(1000), jac=jac, tr_solver="lsmr")
    >>> bool(sol.cost < 1e-15), jac.prep.n_colors, sol.jac.format
    (True, 3, 'csr')
    """
    if _sparse_form("jacobian", sparse, sparsity, chunk, coloring):
        return _SparseJacobian(fun, x0, sparsity, engine, {"coloring": coloring})
    return _Jacobian(fun, x0, chunk, engine)


def _sparse_form(name, sparse, sparsity, chunk, coloring="auto"):
    # whether the sparse form is asked for, the options checked against it
    if sparse:
        if chunk is not None:
            raise TypeError(f"cyad.scipy: {name}(sparse=True) takes no chunk=: a sparse "
                            "derivative evaluates all its products in one call")
        return True
    if sparsity is not None or coloring != "auto":
        raise TypeError(f"cyad.scipy: sparsity= and coloring= are options of "
                        f"{name}(sparse=True)")
    return False


def constraint_hessian(fun, x0=None, v0=None, *, sparse=False, sparsity=None, chunk=None):
    """The constraints' Hessians weighted by multipliers, as ``hess=`` of a
    `scipy.optimize.NonlinearConstraint` (``minimize(method="trust-constr")``).

    ``hess(x, v)`` is the sum over i of ``v[i]`` times the Hessian of ``fun(x)[i]``: the
    Hessian of ``np.sum(fun(x) * v)`` with respect to x, v an argument of it: an input of
    the prep, so that a tape (cyad's default engine) records fun once for every v.

    Parameters
    ----------
    fun : callable
        The constraints ``fun(x)``, returning a 1-D array (NonlinearConstraint's fun).
    x0, v0 : array_like, optional
        Prepare now from an x and multipliers of these shapes (both or neither); otherwise
        the first call prepares.
    sparse : bool, optional
        Return a ``scipy.sparse.csr_array``: its pattern is detected at the first call
        (`cyad.hessian_sparsity`; it holds for every v) unless given, and each call takes
        one Hessian-vector product per color of its star coloring.
    sparsity : sparse matrix or array_like of bool, optional
        With ``sparse=True``: the pattern (x.size x x.size) of every constraint's Hessian
        together, instead of detecting it.
    chunk : int, optional
        Directions per evaluation of fun, at each of the two levels (dense only).

    Returns
    -------
    callable
        ``hess(x, v)`` returning a new float64 array of shape ``x.shape + x.shape``, or
        with ``sparse=True`` a new CSR array.

    Raises
    ------
    TypeError
        If fun is not callable, only one of x0 and v0 is given, or sparsity= or chunk=
        does not fit sparse= (see `jacobian`).
    ValueError
        From a call whose x or v has another shape than the first's; with ``sparse=True``,
        if a given sparsity misses a nonzero of the detected pattern.
    RuntimeError
        From a call made while another call of the callable runs (from another thread, or
        from inside fun).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import NonlinearConstraint, minimize
    >>> import cyad.scipy
    >>> def pairs(x):              # x_i^2 + x_(i+1)^2 <= 1
    ...     return x[1:] ** 2 + x[:-1] ** 2
    >>> cyad.scipy.constraint_hessian(pairs)(np.ones(4), np.array([1.0, 2.0, 3.0]))
    array([[ 2.,  0.,  0.,  0.],
           [ 0.,  6.,  0.,  0.],
           [ 0.,  0., 10.,  0.],
           [ 0.,  0.,  0.,  6.]])
    >>> def objective(x):
    ...     return np.sum((x[1:] - x[:-1]) ** 2) + np.sum(np.cosh(x - 1.0))
    >>> constraint = NonlinearConstraint(pairs, -np.inf, 1.0,
    ...                                  jac=cyad.scipy.jacobian(pairs, sparse=True),
    ...                                  hess=cyad.scipy.constraint_hessian(pairs, sparse=True))
    >>> res = minimize(objective, np.full(200, 0.1), method="trust-constr",
    ...                jac=cyad.scipy.gradient(objective),
    ...                hess=cyad.scipy.hessian(objective, sparse=True),
    ...                constraints=[constraint])
    >>> res.success, bool(np.max(pairs(res.x)) < 1.0 + 1e-6)
    (True, True)
    """
    if _sparse_form("constraint_hessian", sparse, sparsity, chunk):
        chunk = None
    return _ConstraintHessian(fun, x0, v0, sparse, sparsity, chunk)


def ode_jacobian(fun, *, in_place=False, y0=None, sparse=False, sparsity=None,
                 coloring="auto", chunk=None, engine=None):
    """The Jacobian of an ODE right-hand side with respect to y, as ``jac=`` of
    `scipy.integrate.solve_ivp` (BDF, Radau, LSODA).

    Parameters
    ----------
    fun : callable
        The right-hand side ``fun(t, y, *args)`` returning dy/dt, or with ``in_place=True``
        ``rhs(dydt, t, y, *args)`` writing dy/dt into its first argument (output first, like
        cyad's two-argument ``f(y, x)``; wrap it with `ode_function` for ``solve_ivp``'s
        ``fun``). t and args pass through; y is differentiated.
    in_place : bool, optional
        Whether fun is the in-place form ``rhs(dydt, t, y, *args)``.
    y0 : array_like, optional
        Prepare now from a state of this shape; otherwise the first call prepares.
    sparse : bool, optional
        Return a sparse Jacobian (a ``scipy.sparse.csc_array``, the format BDF and Radau
        convert to): its pattern is detected at the first call's t and y
        (`cyad.jacobian_sparsity`; it holds for every t and y on the branch fun took
        there) unless given, and each call evaluates one pushforward per color
        (`cyad.sparse_jacobian`). LSODA takes no sparse Jacobian.
    sparsity : sparse matrix or array_like of bool, optional
        With ``sparse=True``: the Jacobian's pattern (n x n), instead of detecting it. It
        must contain every nonzero at every t and y.
    coloring : {"auto", "column", "row", "bidirectional"}, optional
        With ``sparse=True``: how the products are grouped (see
        `cyad.prepare_sparse_jacobian`).
    chunk : int, optional
        Directions per evaluation of fun (dense only).
    engine : str, optional
        The cyad engine that computes the derivatives (default ``"dual"``; see
        `cyad.prepare_gradient`).

    Returns
    -------
    callable
        ``jac(t, y, *args)`` returning d(dy/dt)/dy, a new float64 array of shape (n, n),
        or with ``sparse=True`` a new CSC array.

    Raises
    ------
    TypeError
        If fun is not callable or is a FunctionWrapper (a C function has no t), or
        sparsity=, coloring= or chunk= does not fit sparse= (see `jacobian`).
    ValueError
        From a call whose y has another shape than the first (in place: unless y is 1-D);
        with ``sparse=True``, if a given sparsity misses a nonzero of the detected pattern.
    RuntimeError
        From a call made while another call of the callable runs (from another thread, or
        from inside fun).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.integrate import solve_ivp
    >>> import cyad.scipy
    >>> def robertson(dydt, t, y):
    ...     dydt[0] = -0.04 * y[0] + 1e4 * y[1] * y[2]
    ...     dydt[1] = 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2
    ...     dydt[2] = 3e7 * y[1] ** 2
    >>> sol = solve_ivp(cyad.scipy.ode_function(robertson), (0.0, 40.0), [1.0, 0.0, 0.0],
    ...                 method="BDF", jac=cyad.scipy.ode_jacobian(robertson, in_place=True),
    ...                 rtol=1e-6, atol=1e-10)
    >>> sol.success, np.round(sol.y[:, -1], 4)
    (True, array([0.7158, 0.    , 0.2842]))
    >>> def heat(t, u):                 # u_t = u_xx - u^3 on 99 points, u = 0 at both ends
    ...     w = np.concatenate([np.zeros(1), u, np.zeros(1)])
    ...     return 1e4 * (w[:-2] - 2.0 * u + w[2:]) - u ** 3
    >>> jac = cyad.scipy.ode_jacobian(heat, sparse=True)
    >>> sol = solve_ivp(heat, (0.0, 1.0), np.ones(99), method="BDF", jac=jac)
    >>> sol.success, jac.prep.n_colors, jac(0.0, sol.y[:, -1]).format
    (True, 3, 'csc')
    """
    _sparse_form("ode_jacobian", sparse, sparsity, chunk, coloring)
    return _OdeJacobian(fun, in_place, y0, chunk, engine, sparse, sparsity, coloring)


def ode_function(rhs):
    """``solve_ivp``'s ``fun(t, y, *args)`` for a right-hand side written in place.

    Parameters
    ----------
    rhs : callable
        ``rhs(dydt, t, y, *args)`` writing dy/dt into dydt (a float64 array shaped like y);
        the same function `ode_jacobian` differentiates with ``in_place=True``.

    Returns
    -------
    callable
        ``fun(t, y, *args)`` returning a new array dydt filled by rhs.

    Raises
    ------
    TypeError
        If rhs is not callable.

    Examples
    --------
    >>> import numpy as np
    >>> import cyad.scipy
    >>> def decay(dydt, t, y, k):
    ...     dydt[...] = -k * y
    >>> cyad.scipy.ode_function(decay)(0.0, np.array([1.0, 2.0]), 0.5)
    array([-0.5, -1. ])
    """
    return _OdeFunction(rhs)


def jac_sparsity(fun, x0, args=()):
    """The Jacobian's pattern of ``fun(x, *args)``, as ``jac_sparsity=`` of ``least_squares``.

    For SciPy's own finite differences: SciPy groups the columns of the pattern that share
    no row and differences each group at once. The pattern is `cyad.jacobian_sparsity`'s,
    recorded at x0: it contains every nonzero at every x where fun takes the branches it
    took at x0.

    Parameters
    ----------
    fun : callable
        The residuals ``fun(x, *args)``, written with NumPy operations.
    x0 : array_like
        Where fun is recorded.
    args : tuple, optional
        Extra arguments of fun.

    Returns
    -------
    scipy.sparse.csr_array
        int8 ones of shape (fun(x0).size, x0.size) where the Jacobian can be nonzero.

    Raises
    ------
    TypeError
        If fun cannot be recorded (a FunctionWrapper of C functions).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import least_squares
    >>> import cyad.scipy
    >>> def residuals(x, a):
    ...     return x[1:] - a * x[:-1] ** 2
    >>> pattern = cyad.scipy.jac_sparsity(residuals, np.ones(5), args=(0.5,))
    >>> pattern.toarray()
    array([[1, 1, 0, 0, 0],
           [0, 1, 1, 0, 0],
           [0, 0, 1, 1, 0],
           [0, 0, 0, 1, 1]], dtype=int8)
    >>> fit = least_squares(residuals, np.ones(5), args=(0.5,), jac_sparsity=pattern)
    >>> bool(fit.cost < 1e-20)
    True
    """
    if args and isinstance(fun, FunctionWrapper):
        raise TypeError("cyad.scipy: a FunctionWrapper (a C function) takes no extra args")
    # fun itself when there are no args: a C function is refused by name
    return jacobian_sparsity((lambda x: fun(x, *args)) if args else fun, _float64(x0))


def ode_jac_sparsity(fun, t0, y0, args=(), *, in_place=False):
    """The pattern of d(dy/dt)/dy, as ``jac_sparsity=`` of `scipy.integrate.solve_ivp`.

    For the finite differences of BDF and Radau. The pattern is `cyad.jacobian_sparsity`'s,
    recorded at (t0, y0): it contains every nonzero at every t and y where fun takes the
    branches it took there.

    Parameters
    ----------
    fun : callable
        The right-hand side ``fun(t, y, *args)``, or with ``in_place=True``
        ``rhs(dydt, t, y, *args)`` writing dy/dt into its first argument.
    t0 : float
        The time fun is recorded at.
    y0 : array_like
        The state fun is recorded at (1-D, as solve_ivp passes it).
    args : tuple, optional
        Extra arguments of fun.
    in_place : bool, optional
        Whether fun is the in-place form ``rhs(dydt, t, y, *args)``.

    Returns
    -------
    scipy.sparse.csr_array
        int8 ones of shape (n, n) where the Jacobian can be nonzero.

    Raises
    ------
    TypeError
        If fun is a FunctionWrapper (a C function cannot be recorded).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.integrate import solve_ivp
    >>> import cyad.scipy
    >>> def heat(dudt, t, u, k):        # u_t = k u_xx - u^3, u = 0 at both ends
    ...     dudt[...] = -2.0 * k * u - u ** 3
    ...     dudt[1:] += k * u[:-1]
    ...     dudt[:-1] += k * u[1:]
    >>> pattern = cyad.scipy.ode_jac_sparsity(heat, 0.0, np.ones(99), args=(1e4,),
    ...                                       in_place=True)
    >>> pattern.nnz
    295
    >>> sol = solve_ivp(cyad.scipy.ode_function(heat), (0.0, 1.0), np.ones(99),
    ...                 method="BDF", args=(1e4,), jac_sparsity=pattern)
    >>> sol.success
    True
    """
    if isinstance(fun, FunctionWrapper):
        raise TypeError("cyad.scipy: ode_jac_sparsity takes a Python function of (t, y); a "
                        "FunctionWrapper's C function cannot be recorded")
    y0 = _float64(y0)
    if in_place:
        return jacobian_sparsity(lambda dydt, y: fun(dydt, t0, y, *args), y0,
                                 y=np.zeros(y0.shape))
    return jacobian_sparsity(lambda y: fun(t0, y, *args), y0)


# -- checking against finite differences ----------------------------------------------------

DerivativeCheck = collections.namedtuple(
    "DerivativeCheck", ["kind", "max_abs_error", "max_rel_error", "derivative", "approximation"])
DerivativeCheck.__doc__ = """What `check_derivatives` found.

Attributes
----------
kind : str
    "gradient", "jacobian" or "hessian".
max_abs_error : float
    The largest absolute difference between cyad's derivative and the approximation.
max_rel_error : float
    max_abs_error divided by the largest absolute entry of the approximation (or by 1 if
    the approximation is all zeros).
derivative : ndarray
    cyad's derivative, or the one given to `check_derivatives`.
approximation : ndarray
    SciPy's finite-difference approximation, of the same shape.

Examples
--------
>>> import numpy as np
>>> import cyad.scipy
>>> check = cyad.scipy.check_derivatives(lambda x: np.sum(x ** 3), [1.0, 2.0])
>>> check.kind, check.derivative.tolist()
('gradient', [3.0, 12.0])
>>> bool(check.max_abs_error < 1e-6)
True
"""


def _approx_derivative():
    try:
        from scipy.optimize import approx_derivative
    except ImportError:     # private in SciPy up to at least 1.17
        from scipy.optimize._numdiff import approx_derivative
    return approx_derivative


def check_derivatives(fun, x, *, kind=None, args=(), derivative=None, method="3-point",
                      rel_step=None):
    """Compare cyad's derivative of fun with SciPy's finite differences, like
    `scipy.optimize.check_grad`.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args)``, scalar-valued for a gradient or a Hessian.
    x : array_like
        Where to compare.
    kind : {None, "gradient", "jacobian", "hessian"}, optional
        The derivative compared; by default the gradient for a scalar fun, else the Jacobian.
    args : tuple, optional
        Extra arguments of fun.
    derivative : callable, optional
        ``derivative(x, *args)`` to check in place of cyad's: a hand-written gradient,
        Jacobian or Hessian, or one of this module's callables.
    method : {"3-point", "2-point", "cs"}, optional
        The finite-difference scheme of `scipy.optimize.approx_derivative` (private in
        SciPy as ``scipy.optimize._numdiff.approx_derivative``). A Hessian is approximated
        by differencing the finite-difference gradient, so it is good to about 1e-5
        relative with "3-point" only.
    rel_step : float, optional
        Relative step of the scheme (SciPy's default when None).

    Returns
    -------
    DerivativeCheck
        ``(kind, max_abs_error, max_rel_error, derivative, approximation)``.

    Raises
    ------
    ValueError
        If kind is not one of those above, "gradient" or "hessian" for a fun that is not
        scalar-valued, or the given derivative has the wrong number of entries.

    Examples
    --------
    >>> import numpy as np
    >>> import cyad.scipy
    >>> def f(x):
    ...     return np.stack([np.sin(x[0]) * x[1], x[0] * np.exp(x[1])])
    >>> check = cyad.scipy.check_derivatives(f, [0.3, 0.7])
    >>> check.kind, check.max_rel_error < 1e-8
    ('jacobian', True)
    >>> def wrong(x):           # a hand-written Jacobian with a mistake in it
    ...     return np.array([[np.cos(x[0]) * x[1], np.sin(x[0])], [np.exp(x[1]), x[0]]])
    >>> cyad.scipy.check_derivatives(f, [0.3, 0.7], derivative=wrong).max_abs_error > 0.1
    True
    """
    approx_derivative = _approx_derivative()
    x = np.array(x, dtype=np.float64)
    shape = x.shape
    value = np.asarray(fun(x, *args), dtype=np.float64)
    if kind is None:
        kind = "gradient" if value.ndim == 0 else "jacobian"
    if kind not in ("gradient", "jacobian", "hessian"):
        raise ValueError(f"cyad.scipy: kind must be 'gradient', 'jacobian' or 'hessian', not "
                         f"{kind!r}")
    if kind != "jacobian" and value.ndim != 0:
        raise ValueError(f"cyad.scipy: a {kind} needs a scalar-valued fun, but fun returns "
                         f"shape {value.shape}")

    def flat(z):
        return np.ravel(np.asarray(fun(z.reshape(shape), *args), dtype=np.float64))

    def fd_gradient(z):
        return approx_derivative(flat, z, method=method, rel_step=rel_step).ravel()

    if derivative is not None:
        derivative = derivative(x.copy(), *args)
    else:
        operator = {"gradient": _operators.gradient, "jacobian": _operators.jacobian,
                    "hessian": _operators.hessian}[kind]
        derivative = operator(lambda z: fun(z, *args), x)
    if kind == "hessian":
        approximation = approx_derivative(fd_gradient, x.ravel(), method=method,
                                          rel_step=rel_step)
    else:
        approximation = approx_derivative(flat, x.ravel(), method=method, rel_step=rel_step)
    derivative = np.asarray(derivative, dtype=np.float64)
    if derivative.size != np.size(approximation):
        raise ValueError(f"cyad.scipy: the derivative has shape {derivative.shape}; a {kind} "
                         f"of this fun at x has {np.size(approximation)} entries")
    approximation = np.reshape(approximation, derivative.shape)
    max_abs = float(np.max(np.abs(derivative - approximation), initial=0.0))
    scale = float(np.max(np.abs(approximation), initial=0.0))
    return DerivativeCheck(kind, max_abs, max_abs / scale if scale > 0 else max_abs,
                           derivative, approximation)

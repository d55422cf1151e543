"""IPOPT's callbacks from plain NumPy functions: exact sparse derivatives, prepared once.

IPOPT (through cyipopt) solves

    min f(x)   subject to   cl <= c(x) <= cu,   lb <= x <= ub

with Newton steps on the barrier problem. At every iterate it asks for f, its gradient, c,
the Jacobian of c (the values of its nonzeros, in the order of a structure given once) and
the Hessian of the Lagrangian

    L(x; sigma, lambda) = sigma f(x) + lambda . c(x)

(the values of its lower triangle, in the order of another structure given once), sigma
and lambda new at every call. `Callbacks` builds all of them, under cyipopt's names, from f
and c written with NumPy; `problem` puts them in a ``cyipopt.Problem`` ready to solve.
Without a Hessian (``hessian=False``) IPOPT approximates it by limited-memory BFGS.

Design:

- Everything is prepared at construction, from x0: the gradient (`cyad.prepare_gradient`:
  reverse mode on the tape by default), c's sparse Jacobian (`cyad.prepare_sparse_jacobian`
  in COO format: its pattern detected once, colored, its coordinates the Jacobian's
  structure; a call refills the data of one result and returns a copy), and the
  Lagrangian's sparse Hessian (below). Calls check x's shape and evaluate.
- sigma and lambda are inputs of the differentiated function, not constants: a prep
  closed over arrays refilled at every call would be recorded anew at every call (a tape
  compares the arrays it took as constants with their copies). So the Lagrangian is
  L(x, sigma, lambda, *args), its arguments after x those of every call (a `Bound` of
  cyad/_arguments, as the sparse operators' with arguments), and so are f's and c's own
  ``args=``. H_xx's pattern is `cyad.hessian_sparsity` of L in x, the union of f's and of
  every c_i's patterns; a star coloring of it gives the directions, all their
  Hessian-vector products are one prepared batched call, and the lower triangle's values
  are gathered straight from the products (a star coloring reads every entry from one
  product, `cyad._sparse.coloring`).
- The patterns hold where f and c take the branches they took at x0: like the sparse
  operators', the Jacobian's and the Hessian's preps watch them on every call and
  raise ValueError where another branch has a nonzero outside the structure.
- The structures are the flat indices of c's output and of x (x is 1-D, as IPOPT gives
  it); the Jacobian's is in COO order, the Hessian's lower triangle in CSR order.
- cyipopt is imported by `problem` alone: `Callbacks` serves any interface to IPOPT that
  takes these callbacks, and ``import cyad.ipopt`` needs no cyipopt.
- Like a prep, the callbacks serve one call at a time (they hold the current (x, sigma,
  lambda) and result buffers): one called while another call runs raises RuntimeError.
"""
import threading

import numpy as np

from cyad import _operators
from cyad._arguments.operators import Arguments
from cyad._sparse import coloring as _coloring
from cyad._sparse import operators as _sparse_operators
from cyad._sparse import recovery as _recovery
from cyad._sparse.sparsity import recorded_pattern

__all__ = ["Callbacks", "problem"]

_FLOAT64 = np.dtype(np.float64)


def _vector(x, size, name):
    # x itself when IPOPT passes what it always passes: a float64 vector of this size
    if not (type(x) is np.ndarray and x.dtype is _FLOAT64):
        x = np.asarray(x, dtype=np.float64)
    if x.shape != (size,):
        raise ValueError(f"cyad.ipopt: {name} has shape {x.shape}, not ({size},)")
    return x


class _Lagrangian:
    """L(x, sigma, lambda, *args) = sigma f(x, *args) + lambda . c(x, *args), the function
    whose Hessian in x IPOPT asks for (no lambda without constraints)."""

    __slots__ = ("objective", "constraints")

    def __init__(self, objective, constraints):
        self.objective, self.constraints = objective, constraints

    def __call__(self, x, sigma, *rest):
        if self.constraints is None:
            return sigma * self.objective(x, *rest)
        return (sigma * self.objective(x, *rest[1:])
                + np.sum(rest[0] * np.reshape(self.constraints(x, *rest[1:]), -1)))


class _LagrangianHessian:
    """The lower triangle of H_xx of L(x, sigma, lambda, *args): one batched hvp, then a
    gather."""

    def __init__(self, lagrangian, x0, m, args, engine):
        self.m = m
        self.arguments = Arguments(lagrangian, x0, self._others(1.0, np.ones(m), args), False)
        bound = self.arguments.bound

        def detect(x, y):
            pattern, tape = recorded_pattern(bound, x, hessian=True)
            return pattern.tocsr(), tape

        try:
            block, recorded = detect(x0, None)
        except TypeError as error:
            raise TypeError(f"cyad.ipopt: f and c are recorded to detect the Lagrangian "
                            f"Hessian's pattern, and this failed ({error}); hessian=False "
                            "leaves the Hessian to IPOPT's limited-memory "
                            "approximation") from error
        block.sort_indices()
        n = x0.size
        rows = np.repeat(np.arange(n, dtype=np.intp), np.diff(block.indptr))
        cols = np.asarray(block.indices, dtype=np.intp)
        lower = rows >= cols
        self.structure = (rows[lower], cols[lower])
        colors = _coloring.star_coloring(block)
        self.n_colors = k = int(colors.max()) + 1 if colors.size and block.nnz else 0
        if k == 0:      # f and c linear: the Hessian is zero
            self.prep, self.source = None, np.zeros(0, dtype=np.intp)
            return
        # where the star decompression reads each nonzero in the (n, k) products ...
        decompression = _recovery.star_decompression(block, colors)
        source = decompression.sources()[0][lower]     # whole: in CSR order
        # ... rewritten for the (k, n) buffer whose rows are the products
        self.source = (source % k) * n + source // k
        seed = _coloring.seed_matrix(colors)
        self.directions = tuple(np.ascontiguousarray(seed[:, c]) for c in range(k))
        self.products = np.zeros((k, n))
        self.outs = tuple(self.products)
        self.prep = _operators.prepare_hvp(bound, x0, self.directions, engine=engine)
        self.watch = _sparse_operators._watch(
            self.prep, lambda: _sparse_operators._GradientWatch(bound, x0, None),
            detect, block, recorded, False)

    def _others(self, sigma, lagrange, args):
        # L's arguments after x: sigma and lambda (inputs of every call), then f's and c's
        return (sigma,) + ((lagrange,) if self.m else ()) + tuple(args)

    def __call__(self, x, lagrange, obj_factor, args):
        if self.prep is None:
            return np.zeros(0)
        bound = self.arguments.bound_to(x, self._others(obj_factor, lagrange, args))
        _operators.hvp(bound, x, self.directions, prep=self.prep, out=self.outs)
        if self.watch is not None:      # f or c took another branch: is H's pattern kept?
            self.watch.check(bound, x, None)
        return np.take(self.products.reshape(-1), self.source)


class Callbacks:
    """IPOPT's callbacks for f and constraints c, with cyad's exact sparse derivatives.

    The methods have cyipopt's names and signatures, so an instance is the ``problem_obj``
    of ``cyipopt.Problem`` (`problem` makes one); everything is prepared at construction.

    Parameters
    ----------
    objective : callable
        ``f(x, *args)`` of a 1-D float64 x, returning a scalar, written with NumPy
        operations (cyad records and differentiates it).
    x0 : array_like
        A 1-D starting point: the derivatives are prepared, and the patterns detected,
        there. A pattern holds for every x on the branches f and c take at x0 (see
        `cyad.jacobian_sparsity`).
    constraints : callable, optional
        ``c(x, *args)`` returning an array of the m constraint values (flattened if not
        1-D). Without it, m = 0.
    args : tuple, optional
        f's and c's other arguments (data, parameters): arrays, numbers, containers of
        them, as `cyad.gradient` takes them. Their float arrays and numbers are inputs of
        the preps, not constants: assigning new values to the attribute ``args`` (for the
        next solve) prepares and records nothing anew; a change of another argument (an
        int, a string, an object) or of a shape raises ValueError at the next call.
    hessian : bool, optional
        Prepare the Hessian of the Lagrangian (default). False leaves it out:
        `hessianstructure` is empty and `hessian` raises, for IPOPT's limited-memory
        approximation (``hessian_approximation="limited-memory"``, which `problem` sets).
    engine : str, optional
        The cyad engine of every derivative (default: cyad's default per operator).
    jacobian_sparsity : sparse matrix or array_like of bool, optional
        The pattern of c's Jacobian (m x n), for a c that cyad cannot record to detect
        it (one that takes a derivative inside, with ``engine="dual"``, and
        ``hessian=False``). Where c can be recorded, it is checked to contain the
        detected pattern (ValueError); otherwise it is trusted, and must contain every
        nonzero (see `cyad.prepare_sparse_jacobian`).

    Attributes
    ----------
    n, m : int
        The numbers of variables and of constraints.
    args : tuple
        The other arguments of f and c, passed at every call.
    jacobian_prep : SparseJacobianPrep or None
        The prep of c's sparse Jacobian (its ``sparsity``, ``coloring``, ``n_colors``).
    hessian_colors : int
        The Hessian-vector products per `hessian` call (0 without a Hessian).

    Raises
    ------
    TypeError
        If objective or constraints is not callable, or cannot be recorded to detect a
        pattern (the Hessian's; the Jacobian's unless given).
    ValueError
        If x0 is not 1-D, f is not scalar-valued, or jacobian_sparsity misses an entry
        of the detected pattern.

    Examples
    --------
    >>> import cyad.ipopt
    >>> def f(x):
    ...     return np.sum((x - 1.0) ** 2)
    >>> def c(x):
    ...     return x[1:] * x[:-1]
    >>> callbacks = cyad.ipopt.Callbacks(f, np.zeros(4), constraints=c)
    >>> callbacks.n, callbacks.m
    (4, 3)
    >>> callbacks.jacobianstructure()
    (array([0, 0, 1, 1, 2, 2]), array([0, 1, 1, 2, 2, 3]))
    >>> callbacks.jacobian(np.array([1.0, 2.0, 3.0, 4.0]))
    array([2., 1., 3., 2., 4., 3.])
    >>> callbacks.hessianstructure()
    (array([0, 1, 1, 2, 2, 3, 3]), array([0, 0, 1, 1, 2, 2, 3]))
    >>> callbacks.hessian(np.zeros(4), np.array([1.0, 2.0, 3.0]), 0.5)
    array([1., 1., 1., 2., 1., 3., 1.])
    """

    def __init__(self, objective, x0, constraints=None, *, args=(), hessian=True,
                 engine=None, jacobian_sparsity=None):
        for name, fun in (("objective", objective), ("constraints", constraints)):
            if not (callable(fun) or (fun is None and name == "constraints")):
                raise TypeError(f"cyad.ipopt: {name} must be a callable, not "
                                f"{type(fun).__name__}")
        x0 = np.array(x0, dtype=np.float64)
        if x0.ndim != 1:
            raise ValueError(f"cyad.ipopt: x0 must be 1-D (IPOPT's x), not of shape {x0.shape}")
        if not isinstance(args, tuple):
            raise TypeError(f"cyad.ipopt: args= takes a tuple, not {type(args).__name__}")
        self._objective = objective
        self._constraints = constraints
        self.args = args
        self.n = x0.size
        self._lock = threading.Lock()
        self._gradient = _operators.prepare_gradient(objective, x0, *args, engine=engine)
        if constraints is None:
            self.m = 0
            self.jacobian_prep = self._jacobian_out = None
            self._jacobian_structure = (np.zeros(0, np.intp), np.zeros(0, np.intp))
        else:
            self.m = np.size(constraints(x0, *args))
            self.jacobian_prep = _sparse_operators.prepare_sparse_jacobian(
                constraints, x0, *args, sparsity=jacobian_sparsity, engine=engine,
                format="coo")
            self._jacobian_out = self.jacobian_prep.new_result()
            self._jacobian_structure = tuple(
                np.asarray(i, dtype=np.intp) for i in self._jacobian_out.coords)
        self._hessian = (_LagrangianHessian(_Lagrangian(objective, constraints), x0, self.m,
                                            args, engine) if hessian else None)
        self.hessian_colors = 0 if self._hessian is None else self._hessian.n_colors

    def _claim(self):
        if not self._lock.acquire(False):
            raise RuntimeError(f"cyad.ipopt: {self!r} is in use by another call (from "
                               "another thread, or from inside the function it "
                               "differentiates); it serves one call at a time")

    def objective(self, x):
        """f(x), a float."""
        return float(self._objective(_vector(x, self.n, "x"), *self.args))

    def gradient(self, x):
        """The gradient of f at x, a new float64 array."""
        x = _vector(x, self.n, "x")
        self._claim()
        try:
            return _operators.gradient(self._objective, x, *self.args, prep=self._gradient)
        finally:
            self._lock.release()

    def constraints(self, x):
        """c(x), a new 1-D float64 array of the m constraints."""
        x = _vector(x, self.n, "x")
        if self._constraints is None:
            return np.zeros(0)
        return np.array(self._constraints(x, *self.args), dtype=np.float64).reshape(-1)

    def jacobianstructure(self):
        """(rows, cols) of the nonzeros of c's Jacobian: the order of `jacobian`'s values."""
        return self._jacobian_structure

    def jacobian(self, x):
        """The values of c's Jacobian at x in `jacobianstructure`'s order, a new array."""
        x = _vector(x, self.n, "x")
        if self.jacobian_prep is None:
            return np.zeros(0)
        self._claim()
        try:
            _sparse_operators.sparse_jacobian(self._constraints, x, *self.args,
                                              prep=self.jacobian_prep, out=self._jacobian_out)
            return self._jacobian_out.data.copy()
        finally:
            self._lock.release()

    def hessianstructure(self):
        """(rows, cols), rows >= cols, of the Lagrangian Hessian's lower triangle."""
        if self._hessian is None:
            return (np.zeros(0, np.intp), np.zeros(0, np.intp))
        return self._hessian.structure

    def hessian(self, x, lagrange, obj_factor):
        """The lower triangle of obj_factor H_f(x) + sum_i lagrange[i] H_ci(x), in
        `hessianstructure`'s order, a new array."""
        if self._hessian is None:
            raise RuntimeError("cyad.ipopt: these callbacks were made with hessian=False; "
                               "IPOPT takes them with hessian_approximation='limited-memory'")
        x = _vector(x, self.n, "x")
        lagrange = _vector(lagrange, self.m, "lagrange")
        self._claim()
        try:
            return self._hessian(x, lagrange, float(obj_factor), self.args)
        finally:
            self._lock.release()

    def __repr__(self):
        name = getattr(self._objective, "__qualname__", None) or repr(self._objective)
        return f"<cyad.ipopt.Callbacks of {name}: n={self.n}, m={self.m}>"


def _cyipopt():
    try:
        import cyipopt
    except ImportError as error:
        raise ImportError("cyad.ipopt.problem needs cyipopt: install cyad's optional extra "
                          "'ipopt' (pip install \".[ipopt]\" in a checkout of cyad), or "
                          "its binary wheel alone: pip install cyipopt-wheels") from error
    return cyipopt


def problem(objective, x0, constraints=None, *, args=(), lb=None, ub=None, cl=None, cu=None,
            hessian=True, engine=None, jacobian_sparsity=None):
    """A ``cyipopt.Problem`` for ``min f(x)`` subject to bounds, with cyad's derivatives.

    Parameters
    ----------
    objective, x0, constraints, args, hessian, engine, jacobian_sparsity
        As for `Callbacks` (``hessian=False`` also sets IPOPT's option
        ``hessian_approximation="limited-memory"``).
    lb, ub : array_like, optional
        Bounds on x (n values each; None: unbounded, cyipopt's default).
    cl, cu : array_like, optional
        Bounds on c(x) (m values each; ``cl[i] == cu[i]`` for an equality). With
        constraints, at least one of them (cyipopt's rule).

    Returns
    -------
    cyipopt.Problem
        Ready to ``solve(x0)`` (which returns ``(x, info)``), its options set with
        ``add_option`` (``print_level``, ``tol``, ...). Its callbacks are a `Callbacks`;
        make one yourself and pass it as ``problem_obj`` to keep a hand on it.

    Raises
    ------
    ImportError
        If cyipopt is not installed (the optional extra ``ipopt``).

    Examples
    --------
    >>> import cyad.ipopt
    >>> def f(x):
    ...     return x[0] * x[3] * np.sum(x[:3]) + x[2]
    >>> def c(x):
    ...     return np.stack([np.prod(x), np.sum(x ** 2)])
    >>> x0 = np.array([1.0, 5.0, 5.0, 1.0])
    >>> nlp = cyad.ipopt.problem(f, x0, constraints=c, lb=np.ones(4), ub=5 * np.ones(4),
    ...                          cl=[25.0, 40.0], cu=[2e19, 40.0])
    >>> nlp.add_option("print_level", 0)
    >>> nlp.add_option("sb", "yes")
    >>> x, info = nlp.solve(x0)
    >>> round(info["obj_val"], 6), np.round(x, 4)
    (17.014017, array([1.    , 4.743 , 3.8211, 1.3794]))
    """
    cyipopt = _cyipopt()
    callbacks = Callbacks(objective, x0, constraints, args=args, hessian=hessian,
                          engine=engine, jacobian_sparsity=jacobian_sparsity)
    nlp = cyipopt.Problem(n=callbacks.n, m=callbacks.m, problem_obj=callbacks, lb=lb, ub=ub,
                          cl=cl, cu=cu)
    if not hessian:
        nlp.add_option("hessian_approximation", "limited-memory")
    return nlp

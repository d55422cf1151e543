"""scipy.sparse's matrices as constants of f: their products and their solves.

A product ``A @ x`` by a scipy.sparse matrix (any format, the ``*_matrix`` and the
``*_array`` API), and a solve of one (``scipy.sparse.linalg.spsolve``, the ``solve`` of
``splu``, ``spilu`` and ``factorized``), is linear in x when A is a constant. One linear
entry (`cyad._primitives._table`'s kind) describes both, as two entry functions,

    sparse_product(x, operator=op, axis=k), sparse_solve(x, operator=op, axis=k):
    op applied to every column of x along axis k,

where `op` is a constant linear map of columns with its adjoint: `MatrixOperator` (A's
product by SciPy's own code; its adjoint A^T) or `SolveOperator` (a factorization's solve;
its adjoint the solve with the transpose). ``impl`` runs op on plain arrays and calls the
entry function again on an engine's arrays; a tangent's lanes are trailing axes, which a
map along axis k carries as more columns; ``transpose`` is the adjoint along the same
axis. So the engines run it as any linear entry, at every order: the dual engine on the
values and on the partials (one sparse product each), the tape as one python instruction
(a replay calls SciPy), reverse mode by the transpose. A product's sparsity pattern is A's
nonzeros, each column apart (``selections``, which cyad/_tape/instructions.py reads); a
solve's inverse is taken as full within each column (``coupled_axes``). The tape records
either as it is (``recorded_as``): no selection of elements is looked for in a sum.

How calls reach cyad. SciPy's ``_matmul_dispatch`` and ``_rmatmul_dispatch`` (behind
``A @ x``, ``A.dot(x)``, the matrix API's ``A * x`` and ``x * A``, ``x @ A``, ``A.T @
y``) call np.asarray on an operand they do not know, which an engine's array refuses,
rather than returning NotImplemented. `install` replaces them on scipy.sparse's classes
(and COO's ``dot``) by wrappers that call cyad's product when the operand is an engine's
array and SciPy's method otherwise (kept as ``__wrapped__``): on plain arrays the result
is SciPy's, at the cost of a call and a type check (measured: under 0.2 us, against
SciPy's 2-5 us for a product of 10 to 1000 rows). ``x @ A`` with x an engine's array
reaches A's ``__rmatmul__`` because the engines' arrays leave the product to an operand
ndarray leaves it to (cyad._array_methods.defers_to). In scipy.sparse.linalg, `install`
puts ``spsolve`` (a wrapper, as cyad._primitives.scipy_dispatch's), ``splu`` and ``spilu``
(SciPy's factorization in a `SuperLU` whose ``solve`` also takes engine arrays) and
``factorized``; as there, a name bound before cyad is imported keeps SciPy's function.

Constants. A tape holds A and compares A's arrays at every call, as it compares the
ndarrays f closes over, so a change in place records f anew; a lil or dok matrix becomes a
CSR copy at each product f makes (SciPy converts it at every product too), which a tape
holds instead (a change of the lil or dok matrix in place is not seen). spsolve factorizes A
once per call of f on the dual engine, once per record on the tape.

Matrices whose entries carry derivatives. scipy.sparse's functions that build a matrix
(`_BUILDERS`) are served by cyad._primitives.scipy_sparse_varying.build: given an
argument carrying derivatives, diags, diags_array, spdiags and kron make a sparse matrix of
derivatives (its products, solves, transpose and sums are differentiated in its entries),
the others are refused; spsolve, splu and factorized hand such a matrix to that module.

Refused, with a TypeError naming the call: complex matrices, a sparse matrix times a 0-d
array carrying derivatives (a constant matrix scaled by it), COO arrays of more than two
dimensions, scipy.sparse's constructors given an array carrying derivatives and its
elementwise operations with one (`sparse_hint` completes the message of the engine's
refusal of np.asarray).
"""
import functools
import math

import numpy as np

from cyad._array_methods import ArrayMethods
from cyad._primitives import scipy_dispatch
from cyad._primitives._table import Linear, is_engine_array
from cyad._primitives.custom import EntryFunction

# -- the constant linear maps -------------------------------------------------------------


def _refuse_complex(dtype, what):
    if np.dtype(dtype).kind == "c":
        raise TypeError(f"cyad: {what} of a complex matrix is not supported on arrays "
                        "carrying derivatives")


class MatrixOperator:
    """A constant scipy.sparse matrix (2-D) as a map of columns: ``op(c)`` is ``A @ c`` by
    SciPy's own product; `adjoint` its transpose (made once); `nonzeros` the positions of
    its nonzero entries. Equal to itself alone: a record of f made after A changed in place
    is not taken for one of the same program, so a sparse prep detects its pattern again
    (cyad._tape.program.same_structure compares the instructions' parameters)."""

    __slots__ = ("matrix", "shape", "dtype", "_adjoint", "_nonzeros", "__weakref__")

    def __init__(self, matrix, adjoint=None):
        if matrix.format in ("lil", "dok"):
            matrix = matrix.tocsr()   # (SciPy's own product converts it at every call)
        self.matrix = matrix
        self.shape = matrix.shape
        self.dtype = matrix.dtype
        self._adjoint = adjoint
        self._nonzeros = None

    def __call__(self, columns):
        return self.matrix @ columns

    def adjoint(self):
        if self._adjoint is None:
            self._adjoint = MatrixOperator(self.matrix.transpose(), self)
        return self._adjoint

    def nonzeros(self):
        """(rows, columns) of A's nonzero entries (explicit zeros left out), int64."""
        if self._nonzeros is None:
            if self._adjoint is not None and self._adjoint._nonzeros is not None:
                columns, rows = self._adjoint._nonzeros
            else:
                coo = self.matrix.tocoo(copy=True)
                coo.sum_duplicates()
                keep = coo.data != 0
                rows, columns = coo.row[keep].astype(np.int64), coo.col[keep].astype(np.int64)
            self._nonzeros = (rows, columns)
        return self._nonzeros

    def arrays(self):
        """The ndarrays holding A's entries and structure (what a tape compares)."""
        matrix = self.matrix
        names = {"csr": ("data", "indices", "indptr"), "csc": ("data", "indices", "indptr"),
                 "bsr": ("data", "indices", "indptr"), "coo": ("data", "row", "col"),
                 "dia": ("data", "offsets")}.get(matrix.format, ())
        return [getattr(matrix, name) for name in names]

    def __repr__(self):
        return f"<product by a {type(self.matrix).__name__} of shape {self.shape}>"


class SolveOperator:
    """A sparse LU factorization's solve as a map of columns: ``op(c)`` solves
    ``op(A) y = c`` (SciPy's SuperLU, of splu or spilu, with its ``trans``), `adjoint` the
    solve with the transpose. `source` is a list holding the SuperLU, or a callable of no
    arguments making it at the first solve (spsolve's), shared with the adjoint. Equal to
    another solve of its shape: their patterns (full within each column) are one."""

    __slots__ = ("source", "trans", "shape", "_adjoint", "__weakref__")

    def __init__(self, source, shape, trans="N", adjoint=None):
        self.source = source       # [factor or a callable making it]: shared with the adjoint
        self.trans = trans
        self.shape = shape
        self._adjoint = adjoint

    @property
    def factor(self):
        factor = self.source[0]
        if not hasattr(factor, "solve"):
            factor = self.source[0] = factor()
        return factor

    def __call__(self, columns):
        factor = self.factor
        columns = np.asarray(columns)
        if columns.dtype != factor.U.dtype and np.can_cast(columns.dtype, factor.U.dtype):
            columns = columns.astype(factor.U.dtype)
        return factor.solve(np.ascontiguousarray(columns), self.trans)

    def adjoint(self):
        if self._adjoint is None:
            self._adjoint = SolveOperator(self.source, self.shape[::-1],
                                          "T" if self.trans == "N" else "N", self)
        return self._adjoint

    def nonzeros(self):
        return None     # (an inverse: full within each column)

    def arrays(self):
        return []

    def __eq__(self, other):
        return type(other) is SolveOperator and other.shape == self.shape

    def __hash__(self):
        return hash(self.shape)

    def __repr__(self):
        return f"<sparse solve of shape {self.shape}, trans={self.trans!r}>"


# -- the linear entry: a map along an axis ------------------------------------------------

def _applied(operator, x, axis):
    """operator applied to x's columns along `axis` (plain arrays)."""
    x = np.asarray(x)
    moved = np.moveaxis(x, axis, 0) if axis else x
    columns = moved if moved.ndim <= 2 else \
        moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))
    # (reshaped: SciPy gives a product of one element as a scalar)
    y = np.asarray(operator(columns)).reshape((operator.shape[0],) + moved.shape[1:])
    return np.ascontiguousarray(np.moveaxis(y, 0, axis)) if axis else y


def _selections(shapes, out_shape, *, operator, axis):
    """(rows, columns, shape) of the selection of each output element's operand elements:
    out[.., i, ..] on x[.., j, ..] for A's nonzeros (i, j), each column apart; None for a
    map without a pattern (a solve)."""
    found = operator.nonzeros()
    if found is None:
        return None
    rows, columns = found
    shape = shapes[0]
    m, n = operator.shape
    before, after = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    b = np.arange(before, dtype=np.int64)[:, None, None]
    a = np.arange(after, dtype=np.int64)[None, None, :]
    out_index = ((b * m + rows[None, :, None]) * after + a).ravel()
    in_index = ((b * n + columns[None, :, None]) * after + a).ravel()
    return [(out_index, in_index, (math.prod(out_shape), math.prod(shape)))]


def _coupled_axes(*, operator, axis):
    return (axis,)


def _along_function(name, recorded_as):
    """The entry function `name`: a constant linear map of columns along an axis."""

    def bind(x, *, operator, axis):
        return (x,), {"operator": operator, "axis": axis}

    def impl(x, extra=0, *, operator, axis):
        # (extra lanes trail: more columns of the same map)
        if is_engine_array(x):
            return function(x, operator=operator, axis=axis)
        return _applied(operator, x, axis)

    def transpose(cotangent, shapes, *, operator, axis):
        return (function(cotangent, operator=operator.adjoint(), axis=axis),)

    entry = Linear(name, {"bind": bind, "impl": impl, "transpose": transpose})
    entry.selections = _selections
    entry.coupled_axes = _coupled_axes
    entry.recorded_as = recorded_as
    function = EntryFunction(entry)
    return function


sparse_product = _along_function("sparse_product", "a scipy.sparse matrix product")
sparse_solve = _along_function("sparse_solve", "a scipy.sparse.linalg solve")


def _captured(x, operator):
    """A tape recording f (x one of its tracers) compares the matrix's arrays at every
    call, as it compares the ndarrays f closes over."""
    captured = getattr(getattr(x, "recording", None), "captured", None)
    if captured is not None:
        known = {id(a) for a in captured}
        captured.extend(a for a in operator.arrays() if id(a) not in known)


# -- products -------------------------------------------------------------------------------

def _name(matrix):
    return f"scipy.sparse.{type(matrix).__name__}"


def _operator_of(matrix, what):
    _refuse_complex(matrix.dtype, f"{what} by a {_name(matrix)}")
    if matrix.ndim > 2:
        raise TypeError(f"cyad: {what} by a {_name(matrix)} of {matrix.ndim} dimensions is "
                        "not supported on arrays carrying derivatives (2 at most)")
    return MatrixOperator(matrix if matrix.ndim == 2 else matrix.reshape(1, -1))


def _refuse_scalar(matrix, x):
    if x.ndim == 0:
        raise TypeError(f"cyad: a {_name(matrix)} times a 0-d array carrying derivatives "
                        "is not supported (cyad makes sparse matrices of derivatives by "
                        "diags, diags_array, spdiags and kron); multiply the vector instead "
                        "(A @ (s * x))")


def matmul(matrix, x):
    """``matrix @ x`` (and the matrix API's ``matrix * x``, ``matrix.dot(x)``) for x an
    engine's array: x of 1 or 2 dimensions, as SciPy takes it."""
    _refuse_scalar(matrix, x)
    operator = _operator_of(matrix, "a product")
    n = operator.shape[1]
    if x.ndim > 2:
        raise ValueError("could not interpret dimensions")
    if x.shape[0] != n:
        raise ValueError(f"matmul: dimension mismatch with signature (n,k={n}),"
                         f"(k={x.shape[0]},m)->(n,m)")
    _captured(x, operator)
    y = sparse_product(x, operator=operator, axis=0)
    return y[0] if matrix.ndim == 1 else y


def rmatmul(x, matrix):
    """``x @ matrix`` (and the matrix API's ``x * matrix``) for x an engine's array of 1
    or 2 dimensions."""
    _refuse_scalar(matrix, x)
    if matrix.ndim == 1:    # a 1-d array: a column
        operator = _operator_of(matrix, "a product")
    else:
        operator = _operator_of(matrix, "a product").adjoint()
    n = operator.shape[1]
    if x.ndim > 2:
        raise ValueError("could not interpret dimensions")
    if x.shape[-1] != n:
        raise ValueError(f"matmul: dimension mismatch with signature (n,k={x.shape[-1]}),"
                         f"(k={n},m)->(n,m)")
    _captured(x, operator)
    y = sparse_product(x, operator=operator, axis=x.ndim - 1)
    return y[..., 0] if matrix.ndim == 1 else y


# -- solves -----------------------------------------------------------------------------------

def _solved(operator, b, name):
    """op(A)^-1 b for b an engine's array of 1 or 2 dimensions (a column (n, 1) as SciPy's
    spsolve takes it: see `spsolve`)."""
    if b.ndim not in (1, 2):
        raise ValueError(f"cyad: {name}: b of {b.ndim} dimensions (1 or 2 are taken)")
    if b.shape[0] != operator.shape[1]:
        raise ValueError(f"{name}: b of shape {b.shape} for a matrix of shape "
                         f"{operator.shape}")
    return sparse_solve(b, operator=operator, axis=0)


def _cyads(x):
    """Whether x is an array of cyad's engines (a dual array, a tracer, a complex one),
    which SciPy's code cannot take; another library's arrays stay SciPy's to take."""
    return isinstance(x, ArrayMethods)


def _splu():
    from scipy.sparse.linalg import splu
    return getattr(splu, "__wrapped__", splu)   # (SciPy's, not the wrapper: a SuperLU)


def _spsolve(original):
    import scipy.sparse as sparse

    from cyad._primitives import scipy_sparse_varying as varying
    splu = _splu()

    @functools.wraps(original)
    def spsolve(A, b, permc_spec=None, use_umfpack=True):
        if isinstance(A, varying.VaryingSparseMatrix):
            return varying.spsolve(A, b, permc_spec)
        if _cyads(A):
            raise TypeError("cyad: scipy.sparse.linalg.spsolve(A, b) with A an array carrying "
                            "derivatives is not supported: a sparse matrix holds plain numbers "
                            "(for a dense A, np.linalg.solve differentiates in A)")
        if not _cyads(b):
            return original(A, b, permc_spec=permc_spec, use_umfpack=use_umfpack)
        if not sparse.issparse(A):
            A = sparse.csc_array(np.asarray(A))
        _refuse_complex(A.dtype, "scipy.sparse.linalg.spsolve")
        if A.ndim != 2 or A.shape[0] != A.shape[1]:
            raise ValueError(f"matrix must be square (has shape {A.shape})")
        dtype = np.promote_types(A.dtype, b.dtype)
        if dtype.kind != "f":
            dtype = np.dtype(np.float64)
        matrix = A

        def factor():
            return splu(sparse.csc_array(matrix, dtype=dtype), permc_spec=permc_spec)

        operator = SolveOperator([factor], A.shape)
        _captured(b, MatrixOperator(A))
        x = _solved(operator, b, "scipy.sparse.linalg.spsolve")
        # SciPy's spsolve returns a column b (n, 1) as a vector
        return x[:, 0] if b.ndim == 2 and b.shape[1] == 1 else x

    spsolve.__cyad_dispatching__ = True
    return spsolve


class SuperLU:
    """SciPy's sparse LU factorization (of splu, spilu), whose ``solve`` also takes an
    array carrying derivatives (linear in the right-hand side: the transpose solves with
    A^T). Every other attribute is the factorization's own; ``isinstance(lu,
    scipy.sparse.linalg.SuperLU)`` holds."""

    __slots__ = ("_factor", "_source")

    def __init__(self, factor):
        self._factor = factor
        self._source = [factor]

    @property
    def __class__(self):
        return type(self._factor)

    def solve(self, rhs, trans="N"):
        if type(rhs) is np.ndarray or not _cyads(rhs):
            return self._factor.solve(rhs, trans)
        factor = self._factor
        _refuse_complex(factor.U.dtype, "SuperLU.solve")
        if trans not in ("N", "T", "H"):
            raise ValueError("trans must be N, T, or H")
        operator = SolveOperator(self._source, factor.shape, "N" if trans == "N" else "T")
        return _solved(operator, rhs, "SuperLU.solve")

    def __getattr__(self, name):
        return getattr(self._factor, name)

    def __repr__(self):
        return repr(self._factor)


def _factorizing(original):
    from cyad._primitives import scipy_sparse_varying as varying

    @functools.wraps(original)
    def factorize(A, *args, **kwargs):
        if isinstance(A, varying.VaryingSparseMatrix):
            if original.__name__ != "splu":
                raise TypeError(f"cyad: scipy.sparse.linalg.{original.__name__} of a sparse "
                                "matrix carrying derivatives is not supported: its solve is "
                                "not the matrix's inverse (splu's is)")
            return varying.splu(A, *args, **kwargs)
        return SuperLU(original(A, *args, **kwargs))

    factorize.__cyad_dispatching__ = True
    return factorize


def _factorized(original):
    from cyad._primitives import scipy_sparse_varying as varying
    splu = _splu()

    @functools.wraps(original)
    def factorized(A):
        if isinstance(A, varying.VaryingSparseMatrix):
            return varying.splu(A).solve
        solve = original(A)
        factor = getattr(solve, "__self__", None)   # splu(A).solve, without UMFPACK
        made = []

        def solving(b):
            if type(b) is np.ndarray or not _cyads(b):
                return solve(b)
            if not made:
                made.append(SuperLU(factor if factor is not None else
                                    splu(A.tocsc() if hasattr(A, "tocsc") else A)))
            return made[0].solve(b)

        return solving

    factorized.__cyad_dispatching__ = True
    return factorized


# -- installing ---------------------------------------------------------------------------------

def _dispatching(original, cyads):
    """SciPy's method `original` (self, other), cyad's `cyads` where other is an engine's
    array."""
    @functools.wraps(original)
    def method(self, other):
        if other.__class__ is np.ndarray or not isinstance(other, ArrayMethods):
            return original(self, other)
        return cyads(self, other)

    method.__cyad_dispatching__ = True
    return method


def _engine_rmatmul(self, other):
    return rmatmul(other, self)


_METHODS = {"_matmul_dispatch": matmul, "_rmatmul_dispatch": _engine_rmatmul, "dot": matmul}

# scipy.sparse's functions that build a matrix from arrays (cyad._primitives.
# scipy_sparse_varying.build: a sparse matrix of derivatives, or a refusal)
_BUILDERS = ("diags", "diags_array", "spdiags", "kron", "kronsum", "block_diag", "bmat",
             "block_array", "hstack", "vstack", "tril", "triu")


def _building(original, name):
    """scipy.sparse's builder `name`, served by scipy_sparse_varying.build (imported at the
    call: its import of scipy.sparse may be what is installing this)."""
    @functools.wraps(original)
    def builder(*args, **kwargs):
        from cyad._primitives import scipy_sparse_varying
        return scipy_sparse_varying.build(original, name, args, kwargs)

    builder.__cyad_dispatching__ = True
    return builder


_LINALG = {"spsolve": _spsolve, "splu": _factorizing, "spilu": _factorizing,
           "factorized": _factorized}


def _classes(base):
    found = [base]
    for cls in base.__subclasses__():
        found += [c for c in _classes(cls) if c not in found]
    return found


def install(module):
    """Put cyad's products into scipy.sparse's classes (`module` scipy.sparse) or its solves
    into scipy.sparse.linalg."""
    if module.__name__ == "scipy.sparse":
        from scipy.sparse._base import _spbase
        for cls in _classes(_spbase):
            for name, cyads in _METHODS.items():
                original = cls.__dict__.get(name)
                if original is None or getattr(original, "__cyad_dispatching__", False):
                    continue
                if name == "dot" and cls is _spbase:
                    continue    # (its dot is self @ other: the product's dispatch)
                scipy_dispatch.replace(cls, name, _dispatching(original, cyads))
        for name in _BUILDERS:
            original = getattr(module, name, None)
            if original is not None and not getattr(original, "__cyad_dispatching__", False):
                scipy_dispatch.replace(module, name, _building(original, name))
    elif module.__name__ == "scipy.sparse.linalg":
        for name, make in _LINALG.items():
            original = getattr(module, name, None)
            if original is None or getattr(original, "__cyad_dispatching__", False):
                continue
            scipy_dispatch.replace(module, name, make(original))


# -- what to do where a matrix would carry derivatives ----------------------------------------

def sparse_hint(module, name):
    """The sentence naming a scipy.sparse function (`module`.`name`, found on the stack by
    cyad._primitives.scipy_dispatch.scipy_hint) that asked an array carrying derivatives
    for its plain values; empty outside scipy.sparse."""
    if not module.startswith("scipy.sparse") or module.startswith("scipy.sparse.linalg"):
        return ""
    call = f"{module}.{name}"
    if name in ("__init__", "__new__"):
        call = "a scipy.sparse matrix's constructor"
    return f" It happened in {call}: a scipy.sparse matrix holds plain numbers. " + _INSTEAD


_INSTEAD = ("cyad differentiates the products and solves of a constant sparse matrix A "
            "(A @ x, x @ A, spsolve(A, b), splu(A).solve(b)) in x and b, and makes a sparse "
            "matrix of derivatives M from diags, diags_array, spdiags and kron (M @ x, x @ M, "
            "M.T, M.toarray(), M + N, s * M, spsolve(M, b), splu(M).solve(b)); but neither "
            "another builder (kronsum, block_diag, bmat, block_array, hstack, vstack, tril, "
            "triu) nor a constructor (csr_array((data, indices, indptr))) of an array "
            "carrying derivatives, nor an elementwise operation of a sparse matrix with one; "
            "write those with the arrays (diags(v) @ x is v * x).")

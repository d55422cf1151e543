"""Sparse matrices whose entries carry derivatives: what scipy.sparse's ``diags``,
``diags_array``, ``spdiags`` and ``kron`` return inside f when an argument carries
derivatives (a PDE's operator with a coefficient field, ``diags(k) @ u``, or
``spsolve(A(p), b)`` with A's values depending on parameters p).

A `VaryingSparseMatrix` is a fixed pattern (row and column index arrays, the shape, the
scipy.sparse class it stands in for) and ``data``, an engine array of its stored entries
(1-D, one per position). Every operation on it is written in operations cyad already
differentiates, so both engines, every order, nesting and sparsity detection serve it with
no rule of its own:

- ``M @ x`` is ``S @ (data[:, None] * x[cols])``, S the constant (m x nnz) selection
  S[rows[k], k] = 1: a gather, a product and a constant sparse product
  (cyad._primitives.scipy_sparse_matrices' ``sparse_product``), whose detected sparsity is
  M's pattern exactly. ``toarray``, ``diagonal`` and a sum of entries at one position are
  constant sparse products of data too; a transpose swaps the index arrays, scaling scales
  data.
- A solve (``spsolve(M, b)``, ``splu(M).solve(b)``) is `solved`, a custom function
  (cyad._primitives.custom) of data and b whose values come from SciPy's splu on the plain
  values, and whose rules call it again: dx = A^-1 (db - dA x); reverse, lam = A^-T xbar,
  bbar = lam, databar_k = -lam[row_k] x[col_k]. A solve and its rules' solves share one
  factorization (`Factors` keeps that of the latest values). Sparsity detection takes its
  result as depending on all of b and data (conservative).

Patterns come from SciPy itself: the builder runs on plain stand-ins (each value's position
1, 2, 3, ... in place of the value, so that none is dropped as a zero) and where each
position lands in SciPy's result says where each value goes, with SciPy's offsets, shapes,
broadcasting of scalars, argument checks and format; a second call on ones of the values'
dtypes gives SciPy's dtype (and its warnings). ``kron`` runs twice, on one factor's positions
times the other's ones and the other way round: each stored entry is the product of the two
values so found. A dense factor carrying derivatives stores every element; the zeros that
pad a BSR result's blocks are not stored.

Refused with a TypeError naming the call: scipy.sparse's other builders given an argument
that carries derivatives (kronsum, block_diag, bmat, block_array, hstack, vstack, tril,
triu: `build` serves them all), constructors (``csr_array((data, indices, indptr))``:
SciPy's classes, which ask for plain numbers), complex values, and any operation on a matrix
of derivatives other than those above; a conversion to a plain array raises cyad's refusal
naming the SciPy function that asked.
"""
import inspect
import operator

import numpy as np
import scipy.sparse as sparse

from cyad import _hints
from cyad._array_methods import ArrayMethods
from cyad._primitives import scipy_sparse_matrices as matrices
from cyad._primitives.custom import custom_derivative


def _carries(value):
    """Whether value carries derivatives: an array of cyad's engines or a sparse matrix of
    derivatives."""
    return isinstance(value, (ArrayMethods, VaryingSparseMatrix))


def _holds_derivatives(value, depth=0):
    if _carries(value):
        return True
    return depth < 2 and isinstance(value, (list, tuple)) and any(
        _holds_derivatives(v, depth + 1) for v in value)


def _refusal(call, what="an array carrying derivatives"):
    return TypeError(f"cyad: {call} of {what} is not supported: a scipy.sparse matrix holds "
                     "plain numbers. " + matrices._INSTEAD)


def _refuse_complex(dtype, call):
    if np.dtype(dtype).kind == "c":
        raise TypeError(f"cyad: {call} of complex values carrying derivatives is not "
                        "supported (a sparse matrix of derivatives holds real numbers)")


def _selection(targets, size):
    """The constant (size x len(targets)) map summing element k into targets[k] (left out
    where it is -1): int8 ones, whose products keep the operand's float dtype."""
    keep = np.flatnonzero(targets >= 0)
    return matrices.MatrixOperator(sparse.csr_array(
        (np.ones(keep.size, np.int8), (targets[keep], keep)), shape=(size, len(targets))))


def _summed(values, operator_):
    """operator_'s constant sparse product applied along values' first axis."""
    return matrices.sparse_product(values, operator=operator_, axis=0)


_KINDS_AFTER = {}


def _kind_after(operation, *kinds):
    """The class and format SciPy gives `operation` of matrices of `kinds` (found once)."""
    key = (operation, *kinds)
    if key not in _KINDS_AFTER:
        result = operation(*(kind((2, 2)) for kind in kinds))
        _KINDS_AFTER[key] = type(result), result.format
    return _KINDS_AFTER[key]


def _scaled(matrix):
    return matrix * 2.0


def _transposed(matrix):
    return matrix.transpose()


def _scalar(value):
    return not sparse.issparse(value) and not isinstance(value, VaryingSparseMatrix) \
        and np.ndim(value) == 0


def _dtype(value):
    return value.dtype if hasattr(value, "dtype") else np.result_type(value)


def _refused(what):
    def method(self, *args):
        raise TypeError(f"cyad: {what} of {self._named()} is not supported")
    method.__name__ = what
    return method


def _refusing_the_rest(cls):
    """cls with the operators of SciPy's matrices that a matrix of derivatives lacks,
    refused by a TypeError naming them (rather than Python's defaults: an identity ==, a
    truth value); unhashable, as SciPy's matrices."""
    for name, what in {"__eq__": "==", "__ne__": "!=", "__lt__": "<", "__le__": "<=",
                       "__gt__": ">", "__ge__": ">=", "__pow__": "**", "__rpow__": "**",
                       "__abs__": "abs()", "__floordiv__": "//", "__rfloordiv__": "//",
                       "__mod__": "%", "__rmod__": "%", "__rtruediv__": "division (/) by it",
                       "__getitem__": "indexing", "__setitem__": "assignment to elements",
                       "__bool__": "the truth value", "__iter__": "iteration",
                       "__len__": "len()"}.items():
        setattr(cls, name, _refused(what))
    cls.__hash__ = None
    return cls


@_refusing_the_rest
class VaryingSparseMatrix:
    """A sparse matrix whose stored entries carry derivatives, in place of the scipy.sparse
    class `kind` (format `format`): entry k, ``data[k]``, at (``rows[k]``, ``cols[k]``),
    one entry per position. Products by arrays, solves, transposes, dense copies, the
    diagonal, scaling and sums with sparse matrices; anything else raises TypeError."""

    __slots__ = ("rows", "cols", "data", "shape", "kind", "format", "_rows_map")
    __array_ufunc__ = None    # (ndarray's and cyad's arrays leave their operators to it)
    ndim = 2

    def __init__(self, rows, cols, data, shape, kind, format):
        self.rows, self.cols, self.data = rows, cols, data
        self.shape, self.kind, self.format = tuple(shape), kind, format
        self._rows_map = None

    @property
    def nnz(self):
        return len(self.rows)

    @property
    def dtype(self):
        return self.data.dtype

    def _named(self):
        return f"a sparse matrix carrying derivatives (for a {self.kind.__name__})"

    def __repr__(self):
        return (f"<cyad sparse matrix of shape {self.shape}, {self.nnz} stored elements "
                f"carrying derivatives, in place of scipy.sparse.{self.kind.__name__}>")

    def _with(self, data, kind_format=None):
        kind, format = kind_format or (self.kind, self.format)
        return VaryingSparseMatrix(self.rows, self.cols, data, self.shape, kind, format)

    def _scipy(self, values):
        """A scipy.sparse matrix of this pattern and class holding plain `values`."""
        coo = sparse.coo_matrix if issubclass(self.kind, sparse.spmatrix) else sparse.coo_array
        return coo((values, (self.rows, self.cols)), shape=self.shape).asformat(self.format)

    # -- products ----------------------------------------------------------------------

    def __matmul__(self, other):
        if _scalar(other):
            raise ValueError("Scalar operands are not allowed, use '*' instead")
        if sparse.issparse(other) or isinstance(other, VaryingSparseMatrix):
            raise TypeError(f"cyad: the product of {self._named()} and a sparse matrix is "
                            "not supported; multiply the arrays instead (A @ (M @ x))")
        x = other if isinstance(other, ArrayMethods) else np.asarray(other)
        if x.ndim > 2:
            raise ValueError("could not interpret dimensions")
        m, n = self.shape
        if x.shape[0] != n:
            raise ValueError(f"matmul: dimension mismatch with signature (n,k={n}),"
                             f"(k={x.shape[0]},m)->(n,m)")
        _refuse_complex(x.dtype, "a product by a sparse matrix of derivatives")
        gathered = x[self.cols]
        terms = self.data * gathered if x.ndim == 1 else self.data[:, None] * gathered
        if self._rows_map is None:
            self._rows_map = _selection(self.rows, m)
        return _summed(terms, self._rows_map)

    def __rmatmul__(self, other):
        if _scalar(other):
            raise ValueError("Scalar operands are not allowed, use '*' instead")
        x = other if isinstance(other, ArrayMethods) else np.asarray(other)
        if x.ndim > 2:
            raise ValueError("could not interpret dimensions")
        return self.transpose() @ x if x.ndim == 1 else (self.transpose() @ x.T).T

    def dot(self, other):
        return self * other if _scalar(other) else self @ other

    def _matrix_api(self):
        return issubclass(self.kind, sparse.spmatrix)

    def __mul__(self, other):
        if _scalar(other):
            _refuse_complex(_dtype(other), "scaling a sparse matrix")
            return self._with(self.data * other, _kind_after(_scaled, self.kind))
        if self._matrix_api():
            return self @ other
        raise TypeError(f"cyad: elementwise multiplication (*) of {self._named()} by an "
                        "array is not supported; M @ x is the product")

    def __rmul__(self, other):
        if _scalar(other):
            return self * other
        if self._matrix_api():
            return self.__rmatmul__(other)
        raise TypeError(f"cyad: elementwise multiplication (*) of an array by "
                        f"{self._named()} is not supported; x @ M is the product")

    def __truediv__(self, other):
        if not _scalar(other):
            raise TypeError(f"cyad: division (/) of {self._named()} by an array is not "
                            "supported; divide by a scalar")
        _refuse_complex(_dtype(other), "scaling a sparse matrix")
        return self._with(self.data / other, _kind_after(_scaled, self.kind))

    def __neg__(self):
        return self._with(-self.data, _kind_after(operator.neg, self.kind))

    # -- sums --------------------------------------------------------------------------

    def _plus(self, other, sign, operation, swapped=False):
        if _scalar(other) and not isinstance(other, ArrayMethods) and other == 0:
            return self if sign > 0 or not swapped else -self      # (SciPy's A + 0)
        if isinstance(other, VaryingSparseMatrix):
            rows, cols, data, kind = other.rows, other.cols, other.data, other.kind
        elif sparse.issparse(other) and other.ndim == 2:
            _refuse_complex(other.dtype, "a sum with a sparse matrix of derivatives")
            coo = other.tocoo()
            rows, cols, data, kind = coo.row, coo.col, coo.data, type(other)
        else:
            raise TypeError(f"cyad: {operation} of {self._named()} and a "
                            f"{type(other).__name__} is not supported (a sparse matrix of "
                            "the same shape is)")
        if other.shape != self.shape:
            raise ValueError("inconsistent shapes")
        own = -self.data if swapped and sign < 0 else self.data
        theirs = data if swapped or sign > 0 else -data
        kinds = (kind, self.kind) if swapped else (self.kind, kind)
        op = operator.add if sign > 0 else operator.sub
        return _made(np.concatenate([self.rows, rows]), np.concatenate([self.cols, cols]),
                     np.concatenate([own, theirs]), None, self.shape,
                     _kind_after(op, *kinds))

    def __add__(self, other):
        return self._plus(other, 1, "the sum (+)")

    def __radd__(self, other):
        return self._plus(other, 1, "the sum (+)", swapped=True)

    def __sub__(self, other):
        return self._plus(other, -1, "the difference (-)")

    def __rsub__(self, other):
        return self._plus(other, -1, "the difference (-)", swapped=True)

    # -- views -------------------------------------------------------------------------

    def transpose(self, axes=None, copy=False):
        if axes is not None and tuple(axes) != (1, 0):
            raise ValueError("Sparse matrices do not support an 'axes' parameter because "
                             "swapping dimensions is the only logical permutation.")
        kind, format = _kind_after(_transposed, self.kind)
        return VaryingSparseMatrix(self.cols, self.rows, self.data, self.shape[::-1], kind,
                                   format)

    @property
    def T(self):
        return self.transpose()

    def toarray(self, order=None, out=None):
        """A dense engine array of the matrix (``out`` refused: a plain array)."""
        if out is not None:
            raise TypeError(f"cyad: toarray(out=...) of {self._named()} is not supported: "
                            "out holds plain numbers")
        m, n = self.shape
        dense = _summed(self.data, _selection(self.rows * n + self.cols, m * n))
        return dense.reshape(m, n)

    def todense(self, order=None, out=None):
        """A dense engine array of the matrix (not an np.matrix, which holds plain numbers)."""
        return self.toarray(order, out)

    def diagonal(self, k=0):
        m, n = self.shape
        length = max(0, min(m + min(k, 0), n - max(k, 0)))
        along = np.where(self.cols - self.rows == k, np.minimum(self.rows, self.cols), -1)
        return _summed(self.data, _selection(along, length))

    # -- refused -----------------------------------------------------------------------

    def __array__(self, dtype=None, copy=None):
        from cyad._primitives.scipy_dispatch import scipy_hint
        raise TypeError(f"cyad: {self._named()} cannot become a plain ndarray: that would drop "
                        f"its derivatives.{_hints.users_line()}" + (scipy_hint(1) or (
                            " M.toarray() is a dense array of derivatives; M @ x, x @ M, "
                            "M.T, M + N, s * M and spsolve(M, b) are differentiated.")))

    def __getattr__(self, name):
        if not name.startswith("_") and hasattr(self.kind, name):
            raise TypeError(f"cyad: {name} of {self._named()} is not supported: its products "
                            "(@, dot), transpose, toarray, diagonal, scaling, sums with "
                            "sparse matrices and solves (spsolve, splu) are")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


def _made(rows, cols, source, index, shape, kind_format):
    """The matrix of the entries source[index[k]] (index None: source[k]) at (rows[k],
    cols[k]), those at one position summed (by a constant sparse product, as SciPy sums
    them), in row-major order."""
    m, n = shape
    linear = rows.astype(np.int64) * n + cols
    positions, first, inverse = np.unique(linear, return_index=True, return_inverse=True)
    if positions.size == linear.size:      # (a reordering: one gather at most)
        index = first if index is None else index[first]
        same = index.size == source.shape[0] and np.array_equal(index, np.arange(index.size))
        data = source if same else source[index]
    else:
        data = _summed(source if index is None else source[index],
                       _selection(inverse.ravel(), positions.size))
    kind, format = kind_format
    return VaryingSparseMatrix(positions // n, positions % n, data, shape, kind, format)


def _entries(result):
    """(rows, cols, positions - 1) of the stored entries of SciPy's `result` of stand-ins
    (a position in its entries; zeros, as a block's padding, left out)."""
    coo = result.tocoo()
    keep = coo.data != 0
    return (coo.row[keep].astype(np.int64), coo.col[keep].astype(np.int64),
            coo.data[keep].astype(np.int64) - 1)


# -- the builders ---------------------------------------------------------------------------

def _leaf(value, call):
    """One array of a builder's values: an engine's array, or plain values as an ndarray."""
    if isinstance(value, VaryingSparseMatrix):
        raise _refusal(call, "a sparse matrix carrying derivatives")
    if isinstance(value, ArrayMethods):
        return value
    if _holds_derivatives(value):
        return np.stack(list(value))
    return np.asarray(value)


def _diagonals(original, name, *args, **kwargs):
    """diags, diags_array or spdiags (`original`) of values carrying derivatives."""
    call = f"scipy.sparse.{name}"
    bound = inspect.signature(original).bind(*args, **kwargs)
    first, values = next(iter(bound.arguments.items()))
    if any(_holds_derivatives(v) for k, v in bound.arguments.items() if k != first):
        raise _refusal(call, "an argument other than the values carrying derivatives")
    container = isinstance(values, (list, tuple))
    leaves = [_leaf(v, call) for v in values] if container else [_leaf(values, call)]
    for leaf in leaves:
        _refuse_complex(leaf.dtype, call)
    starts = np.cumsum([0] + [leaf.size for leaf in leaves])
    ids = [np.arange(start + 1.0, start + leaf.size + 1.0).reshape(leaf.shape)
           for start, leaf in zip(starts, leaves)]
    ones = [np.ones(leaf.shape, leaf.dtype) for leaf in leaves]

    def called(stand_ins, **changed):
        arguments = dict(bound.arguments, **{first: stand_ins if container else stand_ins[0]},
                         **changed)
        again = inspect.BoundArguments(bound.signature, arguments)
        return original(*again.args, **again.kwargs)

    dtype = called(ones).dtype      # (SciPy's, with its checks and warnings)
    _refuse_complex(dtype, call)
    positioned = called(ids, **({"dtype": np.float64} if "dtype" in bound.signature.parameters
                                else {}))
    rows, cols, index = _entries(positioned)
    source = leaves[0].reshape(-1) if len(leaves) == 1 else \
        np.concatenate([leaf.reshape(-1) for leaf in leaves])
    if source.dtype != dtype:
        source = source.astype(dtype)
    return _made(rows, cols, source, index, positioned.shape,
                 (type(positioned), positioned.format))


def _factor(value, array_api, call):
    """A factor of kron as (its values, a stand-in with its positions 1, 2, ..., one with
    ones): a sparse matrix of derivatives, a dense engine array (every element), or a
    constant (its entries as SciPy's kron takes them, duplicates summed)."""
    if isinstance(value, VaryingSparseMatrix):
        return (value.data, value._scipy(np.arange(1.0, value.nnz + 1.0)),
                value._scipy(np.ones(value.nnz)))
    if isinstance(value, ArrayMethods):
        _refuse_complex(value.dtype, call)
        shape = value.shape
        return (value.reshape(-1), np.arange(1.0, value.size + 1.0).reshape(shape),
                np.ones(shape))
    if sparse.issparse(value):
        constant = value.tocoo(copy=True)
    else:
        constant = (sparse.coo_array if array_api else sparse.coo_matrix)(value)
    _refuse_complex(constant.dtype, call)
    constant.sum_duplicates()
    coo = type(constant)
    return (constant.data, coo((np.arange(1.0, constant.nnz + 1.0), constant.coords),
                               shape=constant.shape),
            coo((np.ones(constant.nnz), constant.coords), shape=constant.shape))


def _kron(original, name, *args, **kwargs):
    """kron (`original`) of factors of which one or both carry derivatives."""
    call = f"scipy.sparse.{name}"
    bound = inspect.signature(original).bind(*args, **kwargs)
    a, b = bound.arguments["A"], bound.arguments["B"]
    format = bound.arguments.get("format")     # (plain: the builder refuses one carrying them)
    if not (_carries(a) or _carries(b)):
        raise _refusal(call)
    array_api = any(isinstance(f, sparse.sparray) or (isinstance(f, VaryingSparseMatrix)
                                                      and not f._matrix_api()) for f in (a, b))
    a_values, a_ids, a_ones = _factor(a, array_api, call)
    b_values, b_ids, b_ones = _factor(b, array_api, call)
    on_a, on_b = original(a_ids, b_ones, format=format), original(a_ones, b_ids, format=format)
    if on_a.ndim != 2:
        raise TypeError(f"cyad: {call} of {on_a.ndim} dimensions carrying derivatives is not "
                        "supported (2)")
    rows, cols, a_index = _entries(on_a)
    b_index = _entries(on_b)[2]     # (the same entries in the same order: one structure)
    return _made(rows, cols, a_values[a_index] * b_values[b_index], None, on_a.shape,
                 (type(on_a), on_a.format))


# the builders that make a sparse matrix of derivatives; `builder` refuses the others
BUILDING = {"diags": _diagonals, "diags_array": _diagonals, "spdiags": _diagonals,
            "kron": _kron}


def build(original, name, args, kwargs):
    """scipy.sparse's builder `original` (named `name`) called with args and kwargs: SciPy's
    own on plain arguments; given an argument that carries derivatives, a sparse matrix of
    derivatives (`BUILDING`) or a TypeError naming the call."""
    for value in (*args, *kwargs.values()):
        if type(value) is not np.ndarray and _holds_derivatives(value):
            building = BUILDING.get(name)
            if building is None:
                raise _refusal(f"scipy.sparse.{name}")
            return building(original, name, *args, **kwargs)
    return original(*args, **kwargs)


# -- solves -------------------------------------------------------------------------------

class Factors:
    """A pattern's solves: its positions, SciPy's splu `options`, the LU factorization of
    the latest values solved with (a solve and its derivatives' solves share it), and the
    selections summing a product's terms into rows of op(A) (op: "N" A, "T" A^T)."""

    __slots__ = ("rows", "cols", "shape", "options", "_latest", "_maps")

    def __init__(self, matrix, options):
        self.rows, self.cols, self.shape = matrix.rows, matrix.cols, matrix.shape
        self.options = options
        self._latest = None
        self._maps = {}

    def factor(self, data):
        latest = self._latest
        if latest is not None and latest[0].dtype == data.dtype and \
                np.array_equal(latest[0], data):
            return latest[1]
        matrix = sparse.csc_array((data, (self.rows, self.cols)), shape=self.shape)
        lu = matrices._splu()(matrix, **self.options)
        self._latest = (data.copy(), lu)
        return lu

    def positions(self, trans):
        """(rows, cols) of op(A)'s entries."""
        return (self.rows, self.cols) if trans == "N" else (self.cols, self.rows)

    def rows_map(self, trans):
        if trans not in self._maps:
            self._maps[trans] = _selection(self.positions(trans)[0], self.shape[0])
        return self._maps[trans]


def _other(trans):
    return "T" if trans == "N" else "N"


@custom_derivative(nondiff_argnames=("factors", "trans"), lanes=True)
def solved(data, b, factors, trans):
    """op(A)^-1 b, A the matrix of entries `data` at `factors`' positions (op: trans "N",
    "T"), b solved along its first axis: SciPy's splu on the plain values."""
    data, b = np.asarray(data), np.asarray(b)
    dtype = np.promote_types(data.dtype, b.dtype)
    if dtype.kind != "f" or dtype.itemsize < 4:
        dtype = np.dtype(np.float64)
    lu = factors.factor(data.astype(dtype, copy=False))
    columns = np.ascontiguousarray(b.reshape(b.shape[0], -1), dtype=dtype)
    return lu.solve(columns, trans).reshape(b.shape)


@solved.defjvp
def _solved_jvp(primals, tangents, factors, trans):
    # d(op(A)^-1 b) = op(A)^-1 (db - op(dA) x), every direction (a trailing axis) at once
    data, b = primals
    ddata, db = tangents
    x = solved(data, b, factors, trans)
    rhs = 0.0 if db is None else np.moveaxis(db, 0, -1)
    if ddata is not None:
        rows, cols = factors.positions(trans)
        weights = ddata.T.reshape((len(rows),) + (1,) * (np.ndim(x) - 1) + (ddata.shape[0],))
        terms = weights * x[cols][..., None]
        rhs = rhs - _summed(terms, factors.rows_map(trans))
    return x, np.moveaxis(solved(data, rhs, factors, trans), -1, 0)


@solved.defvjp
def _solved_vjp(primals, cotangent, factors, trans):
    data, b = primals
    x = solved(data, b, factors, trans)
    adjoint = solved(data, cotangent, factors, _other(trans))
    rows, cols = factors.positions(trans)
    terms = adjoint[rows] * x[cols]
    if np.ndim(terms) > 1:
        terms = np.sum(terms.reshape(len(rows), -1), axis=1)
    return (-terms, adjoint)


def _square(matrix):
    if matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrix must be square (has shape {matrix.shape})")


def _right_hand_side(matrix, b, call):
    """b as a solve by `matrix` takes it: dense, of 1 or 2 dimensions, real."""
    n = matrix.shape[1]
    if sparse.issparse(b) or isinstance(b, VaryingSparseMatrix):
        raise TypeError(f"cyad: {call} with {matrix._named()} and a sparse b is not "
                        "supported (a dense b is)")
    b = b if isinstance(b, ArrayMethods) else np.asarray(b)
    _refuse_complex(b.dtype, call)
    if b.ndim not in (1, 2) or b.shape[0] != n:
        raise ValueError(f"{call}: b of shape {b.shape} for a matrix of shape {matrix.shape}")
    return b


def spsolve(matrix, b, permc_spec=None):
    """scipy.sparse.linalg.spsolve(matrix, b) for a sparse matrix of derivatives."""
    _square(matrix)
    b = _right_hand_side(matrix, b, "scipy.sparse.linalg.spsolve")
    x = solved(matrix.data, b, Factors(matrix, {"permc_spec": permc_spec}), "N")
    return x[:, 0] if b.ndim == 2 and b.shape[1] == 1 else x    # (as SciPy's)


class SuperLU:
    """splu(M) of a sparse matrix of derivatives: ``solve(b, trans)`` differentiable in M's
    entries and in b (factorized at the first solve, on the plain values); the factors
    themselves (L, U, perm_r, ...) are refused."""

    __slots__ = ("matrix", "_factors")

    def __init__(self, matrix, options):
        _square(matrix)
        self.matrix = matrix
        self._factors = Factors(matrix, options)

    @property
    def shape(self):
        return self.matrix.shape

    def solve(self, rhs, trans="N"):
        if trans not in ("N", "T", "H"):
            raise ValueError("trans must be N, T, or H")
        rhs = _right_hand_side(self.matrix, rhs, "SuperLU.solve")
        return solved(self.matrix.data, rhs, self._factors, "N" if trans == "N" else "T")

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        raise TypeError(f"cyad: {name} of splu of a sparse matrix carrying derivatives is not "
                        "supported: its solve is")


def splu(matrix, *args, **kwargs):
    """scipy.sparse.linalg.splu(matrix, ...) for a sparse matrix of derivatives (SciPy's
    options, named as SciPy's splu names them)."""
    options = inspect.signature(matrices._splu()).bind(matrix, *args, **kwargs).arguments
    del options["A"]
    return SuperLU(matrix, options)

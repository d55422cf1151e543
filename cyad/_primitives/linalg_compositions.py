"""Linear algebra written with other table functions: no derivative code of their own.

Products (np.cross, np.vdot, np.vecdot, np.matvec, np.vecmat, np.linalg.multi_dot,
np.linalg.matrix_power and the NumPy 2 names of np.linalg: matmul, outer, tensordot,
trace, cross, vecdot, matrix_transpose), norms (np.linalg.norm, vector_norm,
matrix_norm) and the tensor solvers (np.linalg.tensorsolve, tensorinv). Each one calls
NumPy functions on its arguments, which dispatch back to the engine for its arrays.

Norms at their kinks take the conventions of the functions they are made of: abs
has slope 0 at 0, and the ties of np.max and np.min share the derivative (the mean
of the tied elements' derivatives, JAX's convention too). The 2-norm of a vector at
0 has gradient 0. Matrix norms of ord 2, -2 and 'nuc' are made of the singular
values (np.linalg.svd, compute_uv=False), and raise LinAlgError where those are not
differentiable: at repeated or zero singular values.
"""
import warnings

import numpy as np

from cyad._primitives._table import (
    axes_of,
    axis_of,
    composition,
    matrix_transpose,
    ndim_of,
    numpy_function,
    shape_of,
)

# -- products ------------------------------------------------------------------------------


def _vector_axis_last(x, axis):
    return np.moveaxis(x, axis_of(axis, ndim_of(x)), -1)


@composition(np.cross)
def _cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The cross product of 3-vectors, of 2-vectors (the z component, a 2-vector's z
    taken as 0 beside a 3-vector), as NumPy computes it."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = _vector_axis_last(a, axisa), _vector_axis_last(b, axisb)
    na, nb = shape_of(a)[-1], shape_of(b)[-1]
    if na not in (2, 3) or nb not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n"
                         "(dimension must be 2 or 3)")
    if na == 2 or nb == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=3)
    a0, a1, b0, b1 = a[..., 0], a[..., 1], b[..., 0], b[..., 1]
    z = a0 * b1 - a1 * b0
    if na == 2 and nb == 2:
        return z
    if na == 3 and nb == 3:
        a2, b2 = a[..., 2], b[..., 2]
        x, y = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2
    elif na == 3:   # b's z is 0
        a2 = a[..., 2]
        x, y = -a2 * b1, a2 * b0
    else:   # a's z is 0
        b2 = b[..., 2]
        x, y = a1 * b2, -a0 * b2
    result = np.stack([x, y, z], axis=-1)   # each of a's and b's broadcast shape
    return np.moveaxis(result, -1, axis_of(axisc, ndim_of(result)))


@composition(numpy_function("linalg.cross"))
def _linalg_cross(x1, x2, /, *, axis=-1):
    if shape_of(x1)[axis] != 3 or shape_of(x2)[axis] != 3:
        raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but "
                         f"they are {shape_of(x1)[axis]} and {shape_of(x2)[axis]} dimensional "
                         "instead.")
    return np.cross(x1, x2, axis=axis)


@composition(np.vdot)
def _vdot(a, b, /):
    # real operands: the dot product of the flattened arrays
    return np.dot(np.ravel(a), np.ravel(b))


@composition(numpy_function("linalg.vecdot"))
def _linalg_vecdot(x1, x2, /, *, axis=-1):
    return np.sum(x1 * x2, axis=axis)


@composition(numpy_function("linalg.outer"))
def _linalg_outer(x1, x2, /):
    if ndim_of(x1) != 1 or ndim_of(x2) != 1:
        raise ValueError("Input arrays must be one-dimensional, but they are "
                         f"x1.ndim={ndim_of(x1)} and x2.ndim={ndim_of(x2)}.")
    return np.outer(x1, x2)


@composition(numpy_function("linalg.matmul"))
def _linalg_matmul(x1, x2, /):
    return np.matmul(x1, x2)


@composition(numpy_function("linalg.tensordot"))
def _linalg_tensordot(x1, x2, /, *, axes=2):
    return np.tensordot(x1, x2, axes)


@composition(numpy_function("linalg.trace"))
def _linalg_trace(x, /, *, offset=0):
    return np.trace(x, offset, -2, -1)


@composition(numpy_function("matrix_transpose"), numpy_function("linalg.matrix_transpose"))
def _matrix_transpose(x, /):
    if ndim_of(x) < 2:
        raise ValueError("Input array must be at least 2-dimensional, but it is "
                         f"{ndim_of(x)}")
    return matrix_transpose(x)


def _chain_order(shapes):
    """Where to split each run of the chain of matrices: the matrix-chain order of least
    scalar multiplications (NumPy's multi_dot finds the same one)."""
    n = len(shapes)
    dims = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = np.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(arrays, split, i, j):
    if i == j:
        return arrays[i]
    k = split[i][j]
    return np.matmul(_chain(arrays, split, i, k), _chain(arrays, split, k + 1, j))


@composition(np.linalg.multi_dot)
def _multi_dot(arrays):
    arrays = list(arrays)
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    first, last = ndim_of(arrays[0]), ndim_of(arrays[-1])
    if first == 1:   # a row
        arrays[0] = np.reshape(arrays[0], (1, -1))
    if last == 1:    # a column
        arrays[-1] = np.reshape(arrays[-1], (-1, 1))
    if any(ndim_of(x) != 2 for x in arrays):
        raise np.linalg.LinAlgError("multi_dot: every array but the first and last must be "
                                    "two-dimensional")
    result = _chain(arrays, _chain_order([shape_of(x) for x in arrays]), 0, len(arrays) - 1)
    if first == 1 and last == 1:
        return np.reshape(result, ())
    if first == 1 or last == 1:
        return np.reshape(result, (-1,))
    return result


@composition(np.linalg.matrix_power)
def _matrix_power(a, n):
    """a @ a @ ... (n times) by repeated squaring, as NumPy; a negative n powers inv(a)."""
    if not isinstance(n, (int, np.integer)):
        raise TypeError("exponent must be an integer")
    shape = shape_of(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    if n == 0:
        return np.zeros_like(a) + np.eye(shape[-1], dtype=a.dtype)
    if n < 0:
        a, n = np.linalg.inv(a), -n
    if n <= 3:
        result = a
        for _ in range(n - 1):
            result = np.matmul(result, a)
        return result
    z = result = None
    while n > 0:
        z = a if z is None else np.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else np.matmul(result, z)
    return result


# -- solvers of tensor equations --------------------------------------------------------------

@composition(np.linalg.tensorinv)
def _tensorinv(a, ind=2):
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    shape = shape_of(a)
    inverse_shape = shape[ind:] + shape[:ind]
    rows = int(np.prod(shape[ind:]))
    return np.reshape(np.linalg.inv(np.reshape(a, (rows, -1))), inverse_shape)


@composition(np.linalg.tensorsolve)
def _tensorsolve(a, b, axes=None):
    ndim = ndim_of(a)
    if axes is not None:
        order = list(range(ndim))
        for k in axes:
            order.remove(k)
            order.insert(ndim, k)
        a = np.transpose(a, order)
    shape = shape_of(a)[-(ndim - ndim_of(b)):]
    size = int(np.prod(shape))
    if int(np.prod(shape_of(a))) != size ** 2:
        raise np.linalg.LinAlgError("Input arrays must satisfy the requirement "
                                    "prod(a.shape[b.ndim:]) == prod(a.shape[:b.ndim])")
    return np.reshape(np.linalg.solve(np.reshape(a, (size, size)), np.ravel(b)), shape)


# -- norms ------------------------------------------------------------------------------------

@composition(np.linalg.norm)
def _norm(x, ord=None, axis=None, keepdims=False):
    if axis is None and ord is not None and ndim_of(x) not in (1, 2):
        raise ValueError("Improper number of dimensions to norm.")
    axes = axes_of(axis, ndim_of(x))
    if ord is None:  # the 2-norm of the flattened axes (Frobenius for two)
        return _two_norm(x, axes, keepdims)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes, keepdims)
    if len(axes) == 2:
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


@composition(numpy_function("linalg.vector_norm"))
def _linalg_vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    return _vector_norm(x, ord, axes_of(axis, ndim_of(x)), keepdims)


@composition(numpy_function("linalg.matrix_norm"))
def _linalg_matrix_norm(x, /, *, keepdims=False, ord="fro"):
    if ndim_of(x) < 2:
        raise ValueError("The input array must be at least 2-dimensional, but it is "
                         f"{ndim_of(x)}")
    ndim = ndim_of(x)
    return _matrix_norm(x, ord, (ndim - 2, ndim - 1), keepdims)


def _two_norm(x, axes, keepdims):
    # sqrt's infinite slope at 0 meets a zero tangent there: the gradient at 0 is 0
    return np.sqrt(np.sum(x * x, axes, keepdims=keepdims))


def _vector_norm(x, ord, axes, keepdims):
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    if ord == 2:
        return _two_norm(x, axes, keepdims)
    if ord == np.inf:
        return np.max(np.abs(x), axes, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axes, keepdims=keepdims)
    if ord == 0:  # the number of nonzero entries: a constant
        count = np.sum(x != 0, axes, keepdims=keepdims)
        return np.zeros_like(np.sum(x, axes, keepdims=keepdims)) + count
    if ord == 1:
        return np.sum(np.abs(x), axes, keepdims=keepdims)
    return np.sum(np.abs(x) ** ord, axes, keepdims=keepdims) ** (1.0 / ord)


def _matrix_norm(x, ord, axes, keepdims):
    rows, columns = axes
    if rows == columns:
        raise ValueError("Duplicate axes given.")
    if ord in ("fro", "f"):
        return _two_norm(x, axes, keepdims)
    if ord in (2, -2, "nuc"):
        s = np.linalg.svd(np.moveaxis(x, axes, (-2, -1)), compute_uv=False)
        result = np.max(s, -1) if ord == 2 else np.min(s, -1) if ord == -2 else np.sum(s, -1)
    elif ord in (1, -1, np.inf, -np.inf):
        if ord in (np.inf, -np.inf):   # the row sums' extreme, as the column sums' of x^T
            rows, columns = columns, rows
        sums = np.sum(np.abs(x), rows)
        extreme = np.max if ord > 0 else np.min
        result = extreme(sums, columns - 1 if columns > rows else columns)
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        shape = list(shape_of(x))
        shape[axes[0]] = shape[axes[1]] = 1
        result = np.reshape(result, tuple(shape))
    return result


@composition(np.linalg.cond)
class _cond:
    """NumPy's: the ratio of the extreme singular values for p None, 2 and -2, else the norm
    of x times the norm of its inverse; NaN (a singular matrix's 0 / 0) becomes inf unless
    x holds a NaN. Differentiable where the singular values are (apart) or x is invertible."""

    note = ("at a singular matrix, p other than None, 2 and -2 raises LinAlgError (NumPy's "
            "value: inf)")

    def impl(x, p=None):
        shape = shape_of(x)
        if len(shape) >= 2 and shape[-1] * shape[-2] == 0:
            raise np.linalg.LinAlgError("cond is not defined on empty arrays")
        if p is None or (not isinstance(p, str) and p in (2, -2)):
            s = np.linalg.svd(x, compute_uv=False)
            with np.errstate(all="ignore"):
                r = s[..., -1] / s[..., 0] if p == -2 else s[..., 0] / s[..., -1]
        else:
            if len(shape) < 2:
                raise np.linalg.LinAlgError(f"{len(shape)}-dimensional array given. Array "
                                            "must be at least two-dimensional")
            if shape[-1] != shape[-2]:
                raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
            r = (np.linalg.norm(x, p, axis=(-2, -1))
                 * np.linalg.norm(np.linalg.inv(x), p, axis=(-2, -1)))
        nan = np.isnan(r)
        if np.any(nan):
            r = np.where(nan & ~np.any(np.isnan(x), axis=(-2, -1)), np.inf, r)
        return r


# -- NumPy 2's ufuncs of vectors and matrices (real operands) ------------------------------------

@composition(numpy_function("vecdot"))
def _vecdot(x1, x2, /, *, axis=-1):
    return np.sum(x1 * x2, axis=axis)


@composition(numpy_function("matvec"))
def _matvec(x1, x2, /):
    return np.matmul(x1, np.expand_dims(x2, -1))[..., 0]


@composition(numpy_function("vecmat"))
def _vecmat(x1, x2, /):
    return np.matmul(np.expand_dims(x1, -2), x2)[..., 0, :]

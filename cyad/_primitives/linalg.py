"""Linear algebra primitives: det, slogdet, inv, solve, cholesky, eigh, eigvalsh.

The rules are the matrix-calculus ones (Giles, "An extended collection of matrix
derivative results"); every tangent has its lanes leading and broadcasts against
the operand's own stack axes. A solve with a tangent takes all lanes as columns of
one right-hand side (one factorisation), and so does every rule built on it.

np.linalg.cholesky and np.linalg.eigh read one triangle of their input (the lower
one; eigh's UPLO='U' the upper one), so their derivatives are those of the matrix
made symmetric from that triangle: the other triangle's entries have none.

Where a derivative does not exist the rules raise rather than return a number:
det, slogdet and inv of a singular matrix raise LinAlgError (their rules invert
it); eigh and eigvalsh raise LinAlgError at repeated eigenvalues (within the
floating-point resolution of the largest one), where eigenvectors are not
unique and eigenvalues not differentiable.
"""
import numpy as np

from cyad._primitives._table import (
    lanes_padded,
    matrix_transpose,
    ndim_of,
    primitive,
    shape_of,
    unbroadcast,
)

_SLOGDET = type(np.linalg.slogdet(np.eye(1)))
_EIGH = type(np.linalg.eigh(np.eye(1)))


def _inner_product_with(g, t):
    """<g, t> over the last two axes, t's lanes leading."""
    return np.sum(g * t, axis=(-2, -1))


def _solve_lanes(a, r):
    """solve(a, r) for r (lanes, ..., m, k): all lanes as columns of one right-hand side."""
    if ndim_of(a) == 2:
        m = a.shape[-1]
        columns = np.moveaxis(r, -2, 0)
        x = np.linalg.solve(a, np.reshape(columns, (m, -1)))
        return np.moveaxis(np.reshape(x, columns.shape), 0, -2)
    moved = np.moveaxis(r, 0, -1)
    x = np.linalg.solve(a, np.reshape(moved, moved.shape[:-2] + (-1,)))
    return np.moveaxis(np.reshape(x, moved.shape), -1, 0)


def _triangle_masks(n, dtype, uplo):
    """The read triangle with its diagonal, and the same without the diagonal."""
    lower = np.tri(n, dtype=dtype)
    if uplo == "U":
        lower = lower.T
    return lower, lower - np.eye(n, dtype=dtype)


def _symmetrised(t, uplo):
    """The symmetric matrix of the triangle of t that NumPy reads (lanes leading)."""
    read, strict = _triangle_masks(t.shape[-1], t.dtype, uplo)
    return t * read + matrix_transpose(t * strict)


def _symmetrised_adjoint(g, uplo):
    """The adjoint of `_symmetrised`: a cotangent on the read triangle only."""
    read, strict = _triangle_masks(g.shape[-1], g.dtype, uplo)
    return g * read + matrix_transpose(g) * strict


@primitive(np.linalg.det)
class _det:
    def bind(a):
        return (a,), {}

    def impl(a):
        return np.linalg.det(a)

    def jvp(primals, tangents):
        # d det(A) = det(A) <inv(A)^T, dA>
        (a,), (t,) = primals, tangents
        d = np.linalg.det(a)
        return d, d * _inner_product_with(matrix_transpose(np.linalg.inv(a)), t)

    def vjp(primals, ct):
        (a,) = primals
        d = np.linalg.det(a)
        return ((ct * d)[..., None, None] * matrix_transpose(np.linalg.inv(a)),)


@primitive(np.linalg.slogdet)
class _slogdet:
    def bind(a):
        return (a,), {}

    def impl(a):
        return np.linalg.slogdet(a)

    def jvp(primals, tangents):
        # the sign is constant where the determinant is not zero; d log|det A| = <inv(A)^T, dA>
        (a,), (t,) = primals, tangents
        sign, logabsdet = np.linalg.slogdet(a)
        dl = _inner_product_with(matrix_transpose(np.linalg.inv(a)), t)
        return _SLOGDET(sign, logabsdet), _SLOGDET(None, dl)

    def vjp(primals, ct):
        (a,) = primals
        _, ct_logabsdet = ct
        return (np.expand_dims(ct_logabsdet, (-2, -1)) * matrix_transpose(np.linalg.inv(a)),)


@primitive(np.linalg.inv)
class _inv:
    def bind(a):
        return (a,), {}

    def impl(a):
        return np.linalg.inv(a)

    def jvp(primals, tangents):
        (a,), (t,) = primals, tangents
        y = np.linalg.inv(a)
        return y, -np.matmul(np.matmul(y, t), y)

    def vjp(primals, ct):
        (a,) = primals
        yt = matrix_transpose(np.linalg.inv(a))
        return (-np.matmul(np.matmul(yt, ct), yt),)


@primitive(np.linalg.solve)
class _solve:
    """x = solve(A, b), b a vector when it has one axis (NumPy 2); dx = solve(A, db - dA x)."""

    def bind(a, b):
        return (a, b), {}

    def impl(a, b):
        return np.linalg.solve(a, b)

    def jvp(primals, tangents):
        (a, b), (ta, tb) = primals, tangents
        x = np.linalg.solve(a, b)
        vector = ndim_of(b) == 1
        xm = x[..., None] if vector else x
        r = None if tb is None else (tb[..., None] if vector else lanes_padded(tb, xm.ndim))
        if ta is not None:
            r = -np.matmul(ta, xm) if r is None else r - np.matmul(ta, xm)
        if r.shape[1:] != xm.shape:   # a right-hand side broadcast against a stack of matrices
            r = np.broadcast_to(lanes_padded(r, xm.ndim), r.shape[:1] + xm.shape)
        dx = _solve_lanes(a, r)
        return x, dx[..., 0] if vector else dx

    def vjp(primals, ct):
        a, b = primals
        x = np.linalg.solve(a, b)
        gb = np.linalg.solve(matrix_transpose(a), ct)
        if ndim_of(b) == 1:
            ga = -gb[..., :, None] * x[..., None, :]
        else:
            ga = -np.matmul(gb, matrix_transpose(x))
        return unbroadcast(ga, a.shape), unbroadcast(gb, b.shape)


def _phi(m):
    # the lower triangle with half the diagonal
    n = m.shape[-1]
    return m * (np.tri(n, k=-1, dtype=m.dtype) + 0.5 * np.eye(n, dtype=m.dtype))


@primitive(np.linalg.cholesky)
class _cholesky:
    """L = cholesky(A) of the lower triangle; dL = L phi(inv(L) dS inv(L)^T), S symmetric.
    upper=True (NumPy 2) reads the upper triangle: the transpose of A^T's L."""

    def bind(a, /, *, upper=False):
        return (a,), {"upper": upper}

    def impl(a, upper):
        if upper:
            return matrix_transpose(np.linalg.cholesky(matrix_transpose(a)))
        return np.linalg.cholesky(a)

    def jvp(primals, tangents, upper):
        (a,), (t,) = primals, tangents
        if upper:
            a, t = matrix_transpose(a), matrix_transpose(t)
        low = np.linalg.cholesky(a)
        li = np.linalg.inv(low)
        m = np.matmul(np.matmul(li, _symmetrised(t, "L")), matrix_transpose(li))
        dl = np.matmul(low, _phi(m))
        return (matrix_transpose(low), matrix_transpose(dl)) if upper else (low, dl)

    def vjp(primals, ct, upper):
        (a,) = primals
        if upper:
            a, ct = matrix_transpose(a), matrix_transpose(ct)
        low = np.linalg.cholesky(a)
        li = np.linalg.inv(low)
        p = _phi(np.matmul(matrix_transpose(low), ct))
        g = _symmetrised_adjoint(np.matmul(np.matmul(matrix_transpose(li), p), li), "L")
        return (matrix_transpose(g) if upper else g,)


def _eigen_gaps(w):
    """1 / (w_j - w_i) off the diagonal, 0 on it; LinAlgError at repeated eigenvalues (the
    test is written on w, so that an engine replaying this rule repeats it)."""
    n = shape_of(w)[-1]
    eye = np.eye(n, dtype=bool)
    diff = w[..., None, :] - w[..., :, None]
    if n > 1 and np.min(np.abs(diff[..., ~eye])) <= (
            n * np.finfo(w.dtype).eps * np.max(np.abs(w))):
        raise np.linalg.LinAlgError(
            "cyad: numpy.linalg.eigh/eigvalsh at repeated eigenvalues: the eigenvectors are not "
            "unique and the eigenvalues not differentiable there")
    return np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, diff))


def _eigh_tangents(a, t, uplo, vectors):
    # dw = diag(V^T dS V); dV = V (F o (V^T dS V)), F_ij = 1 / (w_j - w_i)
    w, v = np.linalg.eigh(a, uplo)
    f = _eigen_gaps(w)
    m = np.matmul(np.matmul(matrix_transpose(v), _symmetrised(t, uplo)), v)
    n = w.shape[-1]
    dw = np.sum(m * np.eye(n, dtype=w.dtype), axis=-1)
    return w, v, dw, (np.matmul(v, f * m) if vectors else None)


def _eigh_cotangent(a, wb, vb, uplo):
    w, v = np.linalg.eigh(a, uplo)
    f = _eigen_gaps(w)
    inner = np.expand_dims(wb, -1) * np.eye(w.shape[-1], dtype=w.dtype)
    if vb is not None:
        inner = inner + f * np.matmul(matrix_transpose(v), vb)
    g = np.matmul(np.matmul(v, inner), matrix_transpose(v))
    return _symmetrised_adjoint(g, uplo)


@primitive(np.linalg.eigh)
class _eigh:
    def bind(a, UPLO="L"):
        return (a,), {"uplo": UPLO}

    def impl(a, *, uplo):
        return np.linalg.eigh(a, uplo)

    def jvp(primals, tangents, *, uplo):
        w, v, dw, dv = _eigh_tangents(primals[0], tangents[0], uplo, vectors=True)
        return _EIGH(w, v), _EIGH(dw, dv)

    def vjp(primals, ct, *, uplo):
        wb, vb = ct
        return (_eigh_cotangent(primals[0], wb, vb, uplo),)


@primitive(np.linalg.eigvalsh)
class _eigvalsh:
    def bind(a, UPLO="L"):
        return (a,), {"uplo": UPLO}

    def impl(a, *, uplo):
        return np.linalg.eigvalsh(a, uplo)

    def jvp(primals, tangents, *, uplo):
        w, _, dw, _ = _eigh_tangents(primals[0], tangents[0], uplo, vectors=False)
        return w, dw

    def vjp(primals, ct, *, uplo):
        return (_eigh_cotangent(primals[0], ct, None, uplo),)

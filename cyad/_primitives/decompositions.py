"""Decompositions and least squares: qr, svd, svdvals, eig, eigvals, pinv, lstsq, and
matrix_rank.

The JVP rules are JAX's (jax/_src/lax/linalg.py: qr_jvp_rule, svd_jvp_rule), the VJP
rules their adjoints (for the SVD, Townsend's "Differentiating the singular value
decomposition"); eig's is the classical one (Magnus, 1985), the eigenvectors kept at
unit norm; pinv's is Golub and Pereyra's derivative of the pseudo-inverse.
Tangents have their lanes leading, as everywhere in the table, and every rule is
written in table operations, so that it composes to any order.

Where a derivative does not exist the rules raise LinAlgError rather than return a
number:

- qr: Q and R of a matrix of full column rank (a wide matrix: of full rank in its
  first columns, which R's square block factors). mode='complete' of a tall matrix is
  refused (the columns of Q beyond its rank are not unique), as is mode='raw'.
- svd, svdvals: at repeated or zero singular values (singular vectors not unique,
  singular values not differentiable), within the floating-point resolution of the
  largest one; full_matrices=True of a non-square matrix is refused (the extra
  singular vectors are not unique).
- eig, eigvals: at repeated eigenvalues. The eigenvectors' derivatives keep their unit
  norm, as NumPy's. A real matrix whose eigenvalues are complex has complex eigenvalues
  and eigenvectors, as in NumPy: np.linalg.eig and eigvals are compositions that hand it
  to cyad._complex.linalg (whether the eigenvalues are complex is a value-only test, which
  an engine that records f repeats on every replay), and the real ones to the primitives.
- pinv, lstsq: of a rank-deficient matrix (at the cutoff that NumPy's own call uses),
  where the pseudo-inverse jumps. lstsq's rank is a constant; its singular values
  carry NaN derivatives where they repeat (the solution is differentiable there, the
  singular values are not).

matrix_rank is a constant (a count).
"""
import inspect

import numpy as np

from cyad._primitives._table import (
    Primitive,
    composition,
    constant,
    matrix_transpose,
    numpy_function,
    primitive,
    shape_of,
)
from cyad._primitives.custom import EntryFunction, value_only
from cyad._primitives.linalg import _solve_lanes, _symmetrised, _symmetrised_adjoint

_QR = type(np.linalg.qr(np.eye(1)))
_SVD = type(np.linalg.svd(np.eye(1)))
# pinv's and matrix_rank's rtol (NumPy 2): pinv's default, and whether matrix_rank takes it
_PINV_RTOL = inspect.signature(np.linalg.pinv).parameters.get("rtol")
_NO_VALUE = None if _PINV_RTOL is None else _PINV_RTOL.default
_RANK_RTOL = "rtol" in inspect.signature(np.linalg.matrix_rank).parameters


def _eye(n, dtype):
    return np.eye(n, dtype=dtype)


def _strictly_lower(n, dtype):
    return np.tri(n, k=-1, dtype=dtype)


# -- QR ----------------------------------------------------------------------------------------

def _qr_mode(mode, shape):
    m, n = shape[-2:]
    if mode not in ("reduced", "complete", "r"):
        raise TypeError(f"cyad: numpy.linalg.qr with mode={mode!r} is not supported "
                        "(only 'reduced', 'complete' and 'r')")
    if mode == "complete" and m > n:
        raise np.linalg.LinAlgError(
            "cyad: numpy.linalg.qr(mode='complete') of a tall matrix is not differentiable: "
            "the columns of Q beyond the matrix's are not unique; use mode='reduced'")
    return mode


def _qr_square_jvp(q, r, t):
    """dQ, dR of the QR of a matrix of as many or more rows than columns (Q reduced)."""
    # X = dA R^-1 (a solve with R^T), C = Q^T X; Q^T dQ is skew, dR R^-1 upper triangular
    x = matrix_transpose(_solve_lanes(matrix_transpose(r), matrix_transpose(t)))
    c = np.matmul(matrix_transpose(q), x)
    low = c * _strictly_lower(shape_of(r)[-1], r.dtype)
    omega = low - matrix_transpose(low)
    return np.matmul(q, omega - c) + x, np.matmul(c - omega, r)


def _qr_square_vjp(q, r, qb, rb):
    # the adjoint of _qr_square_jvp: (qb + Q N) R^-T, N = tril(M - M^T, -1) - M,
    # M = Q^T qb - rb R^T
    m = -np.matmul(rb, matrix_transpose(r))
    if qb is not None:
        m = m + np.matmul(matrix_transpose(q), qb)
    skew = (m - matrix_transpose(m)) * _strictly_lower(shape_of(r)[-1], r.dtype)
    y = np.matmul(q, skew - m)
    if qb is not None:
        y = y + qb
    return matrix_transpose(np.linalg.solve(r, matrix_transpose(y)))


@primitive(np.linalg.qr)
class _qr:
    def bind(a, mode="reduced"):
        return (a,), {"mode": _qr_mode(mode, shape_of(a))}

    def impl(a, *, mode):
        return np.linalg.qr(a, mode)

    def jvp(primals, tangents, *, mode):
        (a,), (t,) = primals, tangents
        m, n = shape_of(a)[-2:]
        q, r = np.linalg.qr(a)
        if m >= n:
            dq, dr = _qr_square_jvp(q, r, t)
        else:   # A = Q [R1 R2]: Q, R1 the QR of A's first m columns, R2 = Q^T A2
            dq, dr1 = _qr_square_jvp(q, r[..., :m], t[..., :m])
            a2 = a[..., m:]
            dr2 = np.matmul(matrix_transpose(dq), a2) + np.matmul(matrix_transpose(q),
                                                                   t[..., m:])
            dr = np.concatenate([dr1, dr2], axis=-1)
        if mode == "r":
            return r, dr
        return _QR(q, r), _QR(dq, dr)

    def vjp(primals, ct, *, mode):
        (a,) = primals
        m, n = shape_of(a)[-2:]
        q, r = np.linalg.qr(a)
        qb, rb = (None, ct) if mode == "r" else ct
        if m >= n:
            return (_qr_square_vjp(q, r, qb, rb),)
        a2, rb1, rb2 = a[..., m:], rb[..., :m], rb[..., m:]
        # R2 = Q^T A2: A2's cotangent Q rb2, and Q's one more term, A2 rb2^T
        extra = np.matmul(a2, matrix_transpose(rb2))
        qb = extra if qb is None else qb + extra
        return (np.concatenate([_qr_square_vjp(q, r[..., :m], qb, rb1), np.matmul(q, rb2)],
                               axis=-1),)


# -- SVD ---------------------------------------------------------------------------------------

def _singular_gaps(s, shape):
    """F_ij = 1 / (s_j^2 - s_i^2) off the diagonal, 0 on it; LinAlgError at repeated or
    zero singular values (written on s, so that an engine replaying the rule repeats the
    test)."""
    k = shape_of(s)[-1]
    eye = np.eye(k, dtype=bool)
    resolution = max(shape[-2:]) * np.finfo(s.dtype).eps * np.max(s)
    diff = s[..., None, :] - s[..., :, None]
    if np.min(s) <= resolution or (k > 1 and np.min(np.abs(diff[..., ~eye])) <= resolution):
        raise np.linalg.LinAlgError(
            "cyad: numpy.linalg.svd/svdvals at repeated or zero singular values: the "
            "singular vectors are not unique and the singular values not differentiable there")
    squares = diff * (s[..., None, :] + s[..., :, None])
    return np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, squares))


def _svd_tangents(a, t, vectors):
    """s, U, Vh and their tangents (the vectors' None unless `vectors`); JAX's rule."""
    shape = shape_of(a)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    f = _singular_gaps(s, shape)
    v = matrix_transpose(vh)
    ds_matrix = np.matmul(np.matmul(matrix_transpose(u), t), v)
    k = shape_of(s)[-1]
    ds = np.sum(ds_matrix * _eye(k, s.dtype), axis=-1)
    if not vectors:
        return u, s, vh, ds, None, None
    row, column = s[..., None, :], s[..., :, None]
    d_s = ds_matrix * row          # dS diag(s)
    s_d = column * ds_matrix       # diag(s) dS
    du = np.matmul(u, f * (d_s + matrix_transpose(d_s)))
    dv = np.matmul(v, f * (s_d + matrix_transpose(s_d)))
    m, n = shape[-2:]
    if m > n:
        av = np.matmul(t, v)
        du = du + (av - np.matmul(u, np.matmul(matrix_transpose(u), av))) / row
    if n > m:
        au = np.matmul(matrix_transpose(t), u)
        dv = dv + (au - np.matmul(v, np.matmul(vh, au))) / row
    return u, s, vh, ds, du, matrix_transpose(dv)


def _svd_cotangent(a, ub, sb, vhb):
    """The adjoint of _svd_tangents (Townsend's formula); ub and vhb None for the values
    alone."""
    shape = shape_of(a)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    f = _singular_gaps(s, shape)
    k = shape_of(s)[-1]
    row, column = s[..., None, :], s[..., :, None]
    inner = np.expand_dims(sb, -1) * _eye(k, s.dtype)
    if ub is not None:
        utub = np.matmul(matrix_transpose(u), ub)
        inner = inner + (f * (utub - matrix_transpose(utub))) * row
    if vhb is not None:
        vb = matrix_transpose(vhb)
        v = matrix_transpose(vh)
        vtvb = np.matmul(vh, vb)
        inner = inner + column * (f * (vtvb - matrix_transpose(vtvb)))
    g = np.matmul(np.matmul(u, inner), vh)
    m, n = shape[-2:]
    if ub is not None and m > n:
        g = g + np.matmul((ub - np.matmul(u, utub)) / row, vh)
    if vhb is not None and n > m:
        g = g + np.matmul(u, matrix_transpose((vb - np.matmul(v, vtvb)) / row))
    return g


@primitive(np.linalg.svd)
class _svd:
    def bind(a, full_matrices=True, compute_uv=True):
        m, n = shape_of(a)[-2:]
        if compute_uv and full_matrices and m != n:
            raise np.linalg.LinAlgError(
                "cyad: numpy.linalg.svd with full_matrices=True of a non-square matrix is not "
                "differentiable: the singular vectors beyond the matrix's rank are not unique; "
                "pass full_matrices=False")
        return (a,), {"full_matrices": full_matrices, "compute_uv": compute_uv}

    def impl(a, *, full_matrices, compute_uv):
        return np.linalg.svd(a, full_matrices, compute_uv)

    def jvp(primals, tangents, *, full_matrices, compute_uv):
        u, s, vh, ds, du, dvh = _svd_tangents(primals[0], tangents[0], compute_uv)
        if not compute_uv:
            return s, ds
        return _SVD(u, s, vh), _SVD(du, ds, dvh)

    def vjp(primals, ct, *, full_matrices, compute_uv):
        if not compute_uv:
            return (_svd_cotangent(primals[0], None, ct, None),)
        ub, sb, vhb = ct
        return (_svd_cotangent(primals[0], ub, sb, vhb),)


@primitive(numpy_function("linalg.svdvals"))
class _svdvals:
    def bind(x, /):
        return (x,), {}

    def impl(a):
        return np.linalg.svd(a, compute_uv=False)

    def jvp(primals, tangents):
        _, s, _, ds, _, _ = _svd_tangents(primals[0], tangents[0], vectors=False)
        return s, ds

    def vjp(primals, ct):
        return (_svd_cotangent(primals[0], None, ct, None),)


# -- eigenvalues of a general matrix ------------------------------------------------------------

_EIG = type(np.linalg.eig(np.eye(1)))


def _real(result, name):
    # (checked where NumPy computes it, so that an engine replaying the call checks too)
    if any(r.dtype.kind == "c" for r in (result if isinstance(result, tuple) else (result,))):
        raise TypeError(f"cyad: numpy.linalg.{name} of a matrix with complex eigenvalues is not "
                        "supported: dual arrays hold real numbers (a symmetric matrix has real "
                        "ones: numpy.linalg.eigh)")
    return result


def _real_eig(a, name):
    """w, V of np.linalg.eig(a); TypeError where they are complex (a dual array holds real
    numbers), LinAlgError at repeated eigenvalues; with F_ij = 1 / (w_j - w_i), 0 on the
    diagonal."""
    w, v = _real(np.linalg.eig(a), name)
    n = shape_of(w)[-1]
    eye = np.eye(n, dtype=bool)
    diff = w[..., None, :] - w[..., :, None]
    if n > 1 and np.min(np.abs(diff[..., ~eye])) <= (
            n * np.finfo(w.dtype).eps * np.max(np.abs(w))):
        raise np.linalg.LinAlgError(
            f"cyad: numpy.linalg.{name} at repeated eigenvalues: the eigenvectors are not "
            "unique and the eigenvalues not differentiable there")
    return w, v, np.where(eye, 0.0, 1.0 / np.where(eye, 1.0, diff))


def _eig_tangents(a, t, name, vectors):
    # M = V^-1 dA V: dw = diag(M); dV = V (F o M), less each column's part along itself
    # (NumPy's eigenvectors have unit norm)
    w, v, f = _real_eig(a, name)
    m = _solve_lanes(v, np.matmul(t, v))
    n = shape_of(w)[-1]
    dw = np.sum(m * _eye(n, w.dtype), axis=-1)
    if not vectors:
        return w, v, dw, None
    dv = np.matmul(v, f * m)
    return w, v, dw, dv - v * np.sum(v * dv, axis=-2, keepdims=True)


def _eig_cotangent(a, wb, vb, name):
    # the adjoint of _eig_tangents: A's cotangent V^-T G V^T, G = diag(wb) + F o (V^T vb
    # - V^T V diag(V^T vb))
    w, v, f = _real_eig(a, name)
    n = shape_of(w)[-1]
    eye = _eye(n, w.dtype)
    g = np.expand_dims(wb, -1) * eye
    if vb is not None:
        vt = matrix_transpose(v)
        vtvb = np.matmul(vt, vb)
        g = g + f * (vtvb - np.matmul(np.matmul(vt, v), vtvb * eye))
    return np.linalg.solve(matrix_transpose(v), np.matmul(g, matrix_transpose(v)))


class _RealEig:
    """Real eigenvalues only (complex ones are refused), distinct (repeated ones raise
    LinAlgError); the eigenvectors of unit norm, as NumPy's."""

    def bind(a):
        return (a,), {}

    def impl(a):
        return _real(np.linalg.eig(a), "eig")

    def jvp(primals, tangents):
        w, v, dw, dv = _eig_tangents(primals[0], tangents[0], "eig", vectors=True)
        return _EIG(w, v), _EIG(dw, dv)

    def vjp(primals, ct):
        wb, vb = ct
        return (_eig_cotangent(primals[0], wb, vb, "eig"),)


class _RealEigvals:
    def bind(a):
        return (a,), {}

    def impl(a):
        return _real(np.linalg.eigvals(a), "eigvals")

    def jvp(primals, tangents):
        w, _, dw, _ = _eig_tangents(primals[0], tangents[0], "eigvals", vectors=False)
        return w, dw

    def vjp(primals, ct):
        return (_eig_cotangent(primals[0], ct, None, "eigvals"),)


_eig_core = EntryFunction(Primitive("eig", vars(_RealEig)))
_eigvals_core = EntryFunction(Primitive("eigvals", vars(_RealEigvals)))


def _has_complex_eigenvalues(a):
    return np.asarray(np.iscomplexobj(np.linalg.eigvals(a)))


_complex_eigenvalues = value_only(_has_complex_eigenvalues)


@composition(np.linalg.eig)
def _eig(a):
    if _complex_eigenvalues(a):
        from cyad._complex.linalg import eig_of_real
        return eig_of_real(a, vectors=True)
    return _eig_core(a)


@composition(np.linalg.eigvals)
def _eigvals(a):
    if _complex_eigenvalues(a):
        from cyad._complex.linalg import eig_of_real
        return eig_of_real(a, vectors=False)
    return _eigvals_core(a)


# -- pseudo-inverse and least squares ------------------------------------------------------------

@constant(np.linalg.matrix_rank)
def _matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    return np.linalg.matrix_rank(A, tol, hermitian, **({"rtol": rtol} if rtol is not None else {}))


def _pinv_rcond(a, rcond, rtol):
    # the relative cutoff of NumPy's pinv
    if rcond is not None:
        return rcond
    if rtol is _NO_VALUE:
        return 1e-15
    return max(shape_of(a)[-2:]) * np.finfo(a.dtype).eps if rtol is None else rtol


def _check_full_rank(a, rcond, name):
    # (NumPy 1.x's matrix_rank has no relative cutoff: its own default then)
    m, n = shape_of(a)[-2:]
    rank = np.linalg.matrix_rank(a, rtol=rcond) if _RANK_RTOL else np.linalg.matrix_rank(a)
    if np.min(rank) < min(m, n):
        raise np.linalg.LinAlgError(
            f"cyad: numpy.linalg.{name} of a rank-deficient matrix is not differentiable: "
            "the pseudo-inverse jumps where the rank changes")


def _pinv_tangent(a, p, t):
    """Golub and Pereyra: dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P, of
    which the second term vanishes for a wide matrix of full rank (A P = I) and the third
    for a tall one (P A = I)."""
    m, n = shape_of(a)[-2:]
    pt, tt = matrix_transpose(p), matrix_transpose(t)
    dp = -np.matmul(np.matmul(p, t), p)
    if m >= n:
        left = np.matmul(np.matmul(p, pt), tt)
        dp = dp + left - np.matmul(np.matmul(left, a), p)
    if m <= n:
        right = np.matmul(tt, np.matmul(pt, p))
        dp = dp + right - np.matmul(p, np.matmul(a, right))
    return dp


def _pinv_cotangent(a, p, g):
    # the adjoint of _pinv_tangent: -P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)
    m, n = shape_of(a)[-2:]
    pt, gt = matrix_transpose(p), matrix_transpose(g)
    result = -np.matmul(np.matmul(pt, g), pt)
    if m >= n:
        right = np.matmul(gt, np.matmul(p, pt))
        result = result + right - np.matmul(a, np.matmul(p, right))
    if m <= n:
        left = np.matmul(np.matmul(pt, p), gt)
        result = result + left - np.matmul(np.matmul(left, p), a)
    return result


@primitive(np.linalg.pinv)
class _pinv:
    """hermitian=True reads the lower triangle (through eigh): the derivative is that of
    the symmetric matrix made from it."""

    def bind(a, rcond=None, hermitian=False, *, rtol=_NO_VALUE):
        if rcond is not None and rtol is not _NO_VALUE:
            raise ValueError("`rtol` and `rcond` can't be both set.")
        return (a,), {"rcond": _pinv_rcond(a, rcond, rtol), "hermitian": hermitian}

    def impl(a, *, rcond, hermitian):
        return np.linalg.pinv(a, rcond, hermitian)

    def jvp(primals, tangents, *, rcond, hermitian):
        (a,), (t,) = primals, tangents
        if hermitian:
            a, t = _symmetrised(a[None], "L")[0], _symmetrised(t, "L")
        _check_full_rank(a, rcond, "pinv")
        p = np.linalg.pinv(a, rcond)
        return p, _pinv_tangent(a, p, t)

    def vjp(primals, ct, *, rcond, hermitian):
        (a,) = primals
        if hermitian:
            a = _symmetrised(a[None], "L")[0]
        _check_full_rank(a, rcond, "pinv")
        g = _pinv_cotangent(a, np.linalg.pinv(a, rcond), ct)
        return (_symmetrised_adjoint(g, "L") if hermitian else g,)


def _lstsq_rcond(a, rcond):
    return max(shape_of(a)[-2:]) * np.finfo(a.dtype).eps if rcond is None else rcond


def _as_columns(b):
    return b[..., None] if b.ndim == 1 else b


@primitive(np.linalg.lstsq)
class _lstsq:
    """x = pinv(A) b, differentiable in A and b where A has full rank: dx = P (db - dA x)
    + P P^T dA^T r (tall A, r = b - A x) + (I - P A) dA^T P^T x (wide A)."""

    def bind(a, b, rcond=None):
        return (a, b), {"rcond": _lstsq_rcond(a, rcond)}

    def impl(a, b, *, rcond):
        return np.linalg.lstsq(a, b, rcond)

    def jvp(primals, tangents, *, rcond):
        (a, b), (ta, tb) = primals, tangents
        result = x, residuals, _, s = _full_rank_lstsq(a, b, rcond)
        m, n = shape_of(a)
        p = np.linalg.pinv(a, rcond)
        xc = _as_columns(x)
        # the right-hand side's tangent with a columns axis (lanes, m, k)
        rhs = 0.0 if tb is None else (tb[..., None] if b.ndim == 1 else tb)
        if ta is not None:
            rhs = rhs - np.matmul(ta, xc)
        dx = np.matmul(p, rhs)
        dres = None
        if m > n:
            r = _as_columns(b) - np.matmul(a, xc)
            if ta is not None:
                dx = dx + np.matmul(np.matmul(p, matrix_transpose(p)),
                                    np.matmul(matrix_transpose(ta), r))
            # d|r|^2 = 2 r . dr, with A^T r = 0: only db - dA x moves it
            dres = 2.0 * np.sum(r * rhs, axis=-2)
        elif m < n and ta is not None:
            w = np.matmul(matrix_transpose(ta), np.matmul(matrix_transpose(p), xc))
            dx = dx + w - np.matmul(p, np.matmul(a, w))
        if b.ndim == 1:
            dx = dx[..., 0]
        return result, (dx, dres, None, _lstsq_singular_value_tangents(a, s, ta))

    def vjp(primals, ct, *, rcond):
        a, b = primals
        xb, resb, _, sb = ct
        x, _, _, s = _full_rank_lstsq(a, b, rcond)
        m, n = shape_of(a)
        p = np.linalg.pinv(a, rcond)
        xc, xbc = _as_columns(x), _as_columns(xb)
        # the cotangent of rhs = db - dA x (the first term), and of dA through the others
        gr = np.matmul(matrix_transpose(p), xbc)
        ga = np.zeros_like(a) - np.matmul(gr, matrix_transpose(xc))
        if m > n:
            r = _as_columns(b) - np.matmul(a, xc)
            ga = ga + np.matmul(r, matrix_transpose(np.matmul(np.matmul(p, matrix_transpose(p)),
                                                              xbc)))
            gr = gr + 2.0 * resb.reshape(1, -1) * r
            ga = ga - np.matmul(2.0 * resb.reshape(1, -1) * r, matrix_transpose(xc))
        elif m < n:
            y = xbc - np.matmul(matrix_transpose(a), np.matmul(matrix_transpose(p), xbc))
            ga = ga + np.matmul(np.matmul(matrix_transpose(p), xc), matrix_transpose(y))
        return ga + _lstsq_singular_value_cotangent(a, s, sb), (gr[..., 0] if b.ndim == 1 else gr)


def _full_rank_lstsq(a, b, rcond):
    result = np.linalg.lstsq(a, b, rcond)
    if result[2] < min(shape_of(a)):
        raise np.linalg.LinAlgError(
            "cyad: numpy.linalg.lstsq of a rank-deficient matrix is not differentiable: the "
            "least-squares solution jumps where the rank changes")
    return result


def _lstsq_singular_value_tangents(a, s, ta):
    """The singular values' tangents (None for a constant A); NaN where they repeat."""
    if ta is None:
        return None
    k = shape_of(s)[-1]
    resolution = max(shape_of(a)) * np.finfo(s.dtype).eps * np.max(s)
    if k > 1 and np.min(np.abs(np.diff(s))) <= resolution:
        return ta[:, :k, 0] * np.nan   # (NaN in the tangent's own derivatives too)
    return _svd_tangents(a, ta, vectors=False)[3]


def _lstsq_singular_value_cotangent(a, s, sb):
    """The singular values' part of A's cotangent; NaN where they repeat and sb is not 0."""
    k = shape_of(s)[-1]
    resolution = max(shape_of(a)) * np.finfo(s.dtype).eps * np.max(s)
    if k > 1 and np.min(np.abs(np.diff(s))) <= resolution:
        return np.sum(np.where(sb != 0, np.nan, 0.0))
    return _svd_cotangent(a, None, sb, None)

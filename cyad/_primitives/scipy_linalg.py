"""scipy.linalg's decompositions, least squares, norms, special matrices and banded solves on
cyad's arrays.

Each function of `SCIPY_LINALG` has SciPy's signature and return structure and computes
through NumPy's linalg, whose entries cyad differentiates at every order
(`cyad._primitives.linalg`, `decompositions`, `linalg_compositions`), or through constant
gathers, concatenations and solves; `cyad._primitives.scipy_functions` takes them into its
table. Their values on cyad's arrays are NumPy's LAPACK calls rather than SciPy's (equal up
to rounding), and where a derivative does not exist NumPy's entries raise LinAlgError
(repeated eigenvalues or singular values, rank-deficient least squares).

- lstsq: np.linalg.lstsq with SciPy's cutoff (cond, machine epsilon by default: gelsd
  reads it as np.linalg.lstsq reads rcond), SciPy's residues (a number for a vector b, empty
  unless the rank is full and a is tall) and rank (an int); gelsy's singular values are None.
- pinv: np.linalg.pinv with SciPy's cutoff atol + rtol * max(s) (atol > 0: of a matrix of
  full rank at that cutoff, else LinAlgError, as np.linalg.pinv's derivative raises below
  its own cutoff).
- eigh, eigvalsh: np.linalg.eigh of the triangle `lower` names; the generalized problem by
  the Cholesky factor L of b's triangle (type 1: eigh(L^-1 a L^-T), v = L^-T y; types 2
  and 3: eigh(L^T a L), v = L^-T y or L y), so that v^T b v = I (type 3: v^T b^-1 v = I),
  as LAPACK normalizes them; subset_by_index a slice of the ascending result.
- svd, svdvals, qr ("economic" is NumPy's "reduced", "full" its "complete", "r" a
  1-tuple of the (M, N) R), norm, eig and eigvals (complex eigenvalues as SciPy's: of
  NumPy's eig, whose complex results come from `cyad._complex.linalg`).
- block_diag, toeplitz, circulant, hankel: concatenations and constant gathers.
- solve_banded, solveh_banded: the dense matrix gathered from LAPACK's band storage, then
  a dense solve (O(n^3) in the matrix's size, against LAPACK's banded O(n (l + u)^2)).

Refused on cyad's arrays, with TypeError naming the function and argument: eigh's and
eigvalsh's subset_by_value (how many eigenvalues it keeps depends on their values), qr's
pivoting=True (a column permutation chosen by the values) and mode="raw" (LAPACK's
reflectors), eig's and eigvals' b (the generalized problem) and left eigenvectors, and stacks
of matrices in lstsq and the banded solves (one matrix, 2-D, there).
"""
import warnings

import numpy as np

from cyad._primitives._table import as_operand, matrix_transpose
from cyad._primitives.custom import value_only
from cyad._primitives.linalg import _symmetrised


def _refuse(function, what, why):
    raise TypeError(f"cyad: scipy.linalg.{function} with {what} is not supported on cyad's "
                    f"arrays: {why}")


def _one_system(a, b, function):
    """Refuses SciPy's stacks: a one matrix (2-D), b one or two axes."""
    if np.ndim(a) != 2 or np.ndim(b) not in (1, 2):
        _refuse(function, f"arrays of shapes {np.shape(a)} and {np.shape(b)}", "it takes one "
                "matrix (2-D) and a right-hand side of one or two axes, not stacks of them")


# -- least squares and the pseudo-inverse ---------------------------------------------------

def _scipy_lstsq(a, b, cond=None, overwrite_a=False, overwrite_b=False, check_finite=True,
                 lapack_driver=None):
    a, b = as_operand(a), as_operand(b)
    _one_system(a, b, "lstsq")
    driver = "gelsd" if lapack_driver is None else lapack_driver
    if driver not in ("gelsd", "gelsy", "gelss"):
        raise ValueError(f'LAPACK driver "{driver}" is not found')
    if np.shape(a)[0] != np.shape(b)[0]:
        raise ValueError('Shape mismatch: a and b should have the same number'
                         f' of rows ({np.shape(a)[0]} != {np.shape(b)[0]}).')
    if cond is None:   # gelsd's cutoff: eps of LAPACK's precision, relative to max(s)
        cond = np.finfo(np.result_type(a.dtype, b.dtype, np.float32)).eps
    x, residues, rank, s = np.linalg.lstsq(a, b, rcond=cond)
    if driver == "gelsy":
        return x, np.zeros(0, x.dtype), int(rank), None
    if np.ndim(b) == 1 and np.shape(residues)[0] == 1:
        residues = residues[0]
    return x, residues, int(rank), s


def _pinv_rank_value(a, *, atol, rtol):
    # SciPy's rank: the singular values above atol + rtol * the largest
    s = np.linalg.svd(a, compute_uv=False)
    return np.sum(s > atol + rtol * np.max(s, axis=-1, keepdims=True), axis=-1)


_pinv_rank = value_only(_pinv_rank_value)


def _scipy_pinv(a, *, atol=None, rtol=None, return_rank=False, check_finite=True):
    atol = 0.0 if atol is None else atol
    rtol = max(np.shape(a)[-2:]) * np.finfo(a.dtype).eps if rtol is None else rtol
    if atol < 0.0 or rtol < 0.0:
        raise ValueError("atol and rtol values must be positive.")
    rank = None
    if atol > 0.0 or return_rank:
        rank = _pinv_rank(a, atol=atol, rtol=rtol)
        if np.any(rank < min(np.shape(a)[-2:])):
            raise np.linalg.LinAlgError(
                "cyad: scipy.linalg.pinv of a matrix rank-deficient at its cutoff (atol + rtol "
                "* the largest singular value) is not differentiable: the pseudo-inverse jumps "
                "where the rank changes")
    # SciPy's cutoff atol + rtol * max(s) is NumPy's rcond * max(s) for atol = 0; for a
    # matrix of full rank at it, NumPy's cutoff at rtol keeps the same singular values
    p = np.linalg.pinv(a, rtol)
    return (p, rank[()]) if return_rank else p


# -- symmetric eigenproblems -------------------------------------------------------------------

_EIGH_DRIVERS = (None, "ev", "evd", "evr", "evx", "gv", "gvd", "gvx")


def _generalized(a, b, uplo, type, eigvals_only):
    """eigh of (a, b) through the Cholesky factor L of b's triangle: the reduced symmetric
    matrix's eigenvalues, and its eigenvectors y mapped back."""
    low = np.linalg.cholesky(_symmetrised(b, uplo))
    a = _symmetrised(a, uplo)
    if type == 1:   # L^-1 a L^-T (a symmetric: L^-1 (L^-1 a)^T)
        reduced = np.linalg.solve(low, matrix_transpose(np.linalg.solve(low, a)))
    else:
        reduced = np.matmul(np.matmul(matrix_transpose(low), a), low)
    if eigvals_only:
        return np.linalg.eigvalsh(reduced), None
    w, y = np.linalg.eigh(reduced)
    return w, (np.matmul(low, y) if type == 3 else np.linalg.solve(matrix_transpose(low), y))


def _eigh(a, b, lower, eigvals_only, type, subset_by_index, subset_by_value, driver, function):
    if driver not in _EIGH_DRIVERS:
        raise ValueError('"{}" is unknown. Possible values are "None", "{}".'
                         ''.format(driver, '", "'.join(_EIGH_DRIVERS[1:])))
    if subset_by_index and subset_by_value:
        raise ValueError('Either index or value subset can be requested.')
    if subset_by_value:
        _refuse(function, "subset_by_value", "how many eigenvalues it keeps depends on their "
                "values; select from the whole result, or by subset_by_index")
    uplo = "L" if lower else "U"
    n = np.shape(a)[-1]
    if b is not None:
        if type not in (1, 2, 3):
            raise ValueError('"type" keyword only accepts 1, 2, and 3.')
        if np.shape(b) != np.shape(a):
            raise ValueError(f"wrong b dimensions {np.shape(b)}, should be {np.shape(a)}")
        w, v = _generalized(as_operand(a), as_operand(b), uplo, type, eigvals_only)
    elif eigvals_only:
        w, v = np.linalg.eigvalsh(a, uplo), None
    else:
        w, v = np.linalg.eigh(a, uplo)
    if subset_by_index:
        lo, hi = (int(i) for i in subset_by_index)
        if not (0 <= lo <= hi < n):
            raise ValueError('Requested eigenvalue indices are not valid. '
                             f'Valid range is [0, {n-1}] and start <= end, but '
                             f'start={lo}, end={hi} is given')
        w = w[..., lo:hi + 1]
        v = None if v is None else v[..., lo:hi + 1]
    return w if eigvals_only else (w, v)


def _scipy_eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False,
                overwrite_b=False, type=1, check_finite=True, subset_by_index=None,
                subset_by_value=None, driver=None):
    return _eigh(a, b, lower, eigvals_only, type, subset_by_index, subset_by_value, driver,
                 "eigh")


def _scipy_eigvalsh(a, b=None, *, lower=True, overwrite_a=False, overwrite_b=False, type=1,
                    check_finite=True, subset_by_index=None, subset_by_value=None,
                    driver=None):
    return _eigh(a, b, lower, True, type, subset_by_index, subset_by_value, driver,
                 "eigvalsh")


# -- general eigenproblems ---------------------------------------------------------------------

def _complex_eigenvalues(w, homogeneous_eigvals):
    """SciPy's eigenvalues: complex, real ones too; stacked over ones if homogeneous."""
    from cyad._complex.array import is_complex
    if not is_complex(w):
        w = w.astype(np.result_type(w.dtype, np.complex64))
    return np.stack([w, np.ones(np.shape(w), w.dtype)]) if homogeneous_eigvals else w


def _eig(a, b, left, right, homogeneous_eigvals, function):
    if b is not None:
        _refuse(function, "b (the generalized eigenproblem)", "eig(solve(b, a)) has its "
                "eigenvalues, or scipy.linalg.eigh for a symmetric a and positive definite b")
    if left:
        _refuse(function, "left=True", "the left eigenvectors are not computed here")
    if not right:
        return _complex_eigenvalues(np.linalg.eigvals(a), homogeneous_eigvals)
    w, v = np.linalg.eig(a)
    return _complex_eigenvalues(w, homogeneous_eigvals), v


def _scipy_eig(a, b=None, left=False, right=True, overwrite_a=False, overwrite_b=False,
               check_finite=True, homogeneous_eigvals=False):
    return _eig(a, b, left, right, homogeneous_eigvals, "eig")


def _scipy_eigvals(a, b=None, overwrite_a=False, check_finite=True, homogeneous_eigvals=False):
    return _eig(a, b, False, False, homogeneous_eigvals, "eigvals")


# -- SVD, QR and norms -----------------------------------------------------------------------

def _scipy_svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
               lapack_driver="gesdd"):
    if lapack_driver not in ("gesdd", "gesvd"):
        raise ValueError(f'lapack_driver must be "gesdd" or "gesvd", not "{lapack_driver}"')
    if not compute_uv:
        return np.linalg.svd(a, compute_uv=False)
    u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return u, s, vh


def _scipy_svdvals(a, overwrite_a=False, check_finite=True):
    return np.linalg.svd(a, compute_uv=False)


def _scipy_qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    if mode not in ("full", "qr", "r", "economic", "raw"):
        raise ValueError("Mode argument should be one of ['full', 'r', 'economic', 'raw']")
    if pivoting:
        _refuse("qr", "pivoting=True", "its column permutation is chosen by the values")
    if mode == "raw":
        _refuse("qr", "mode='raw'", "LAPACK's Householder reflectors have no counterpart "
                "here; use mode='economic'")
    shape = np.shape(a)
    m, n = shape[-2:]
    if mode == "r":   # SciPy's R has a's shape: zero rows below NumPy's for a tall a
        r = np.linalg.qr(a, mode="r")
        if m > n:
            r = np.concatenate([r, np.zeros(shape[:-2] + (m - n, n), r.dtype)], axis=-2)
        return (r,)
    if m > n and mode != "economic":
        raise np.linalg.LinAlgError(
            f"cyad: scipy.linalg.qr(mode={mode!r}) of a tall matrix is not differentiable: "
            "the columns of Q beyond the matrix's are not unique; use mode='economic'")
    q, r = np.linalg.qr(a)
    return q, r


def _scipy_norm(a, ord=None, axis=None, keepdims=False, check_finite=True):
    return np.linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims)


# -- special matrices -----------------------------------------------------------------------

def _scipy_block_diag(*arrs):
    arrs = [np.atleast_2d(as_operand(a)) for a in arrs]
    batch = np.broadcast_shapes(*(np.shape(a)[:-2] for a in arrs))
    arrs = [np.broadcast_to(a, batch + np.shape(a)[-2:]) for a in arrs]
    dtype = np.result_type(*(a.dtype for a in arrs))
    width = sum(np.shape(a)[-1] for a in arrs)
    rows, start = [], 0
    for a in arrs:
        height, columns = np.shape(a)[-2:]
        left = np.zeros(batch + (height, start), dtype)
        right = np.zeros(batch + (height, width - start - columns), dtype)
        rows.append(np.concatenate([left, a, right], axis=-1))
        start += columns
    return np.concatenate(rows, axis=-2)


def _scipy_toeplitz(c, r=None):
    c = np.atleast_1d(as_operand(c))
    r = np.conjugate(c) if r is None else np.atleast_1d(as_operand(r))
    batch = np.broadcast_shapes(np.shape(c)[:-1], np.shape(r)[:-1])
    c = np.broadcast_to(c, batch + np.shape(c)[-1:])
    r = np.broadcast_to(r, batch + np.shape(r)[-1:])
    m, n = np.shape(c)[-1], np.shape(r)[-1]
    # entry (i, j) of [c reversed, r[1:]]: m - 1 - i + j
    values = np.concatenate([np.flip(c, axis=-1), r[..., 1:]], axis=-1)
    return values[..., m - 1 - np.arange(m)[:, None] + np.arange(n)]


def _scipy_circulant(c):
    c = np.atleast_1d(as_operand(c))
    n = np.shape(c)[-1]
    return c[..., (np.arange(n)[:, None] - np.arange(n)) % n]


def _scipy_hankel(c, r=None):
    c = as_operand(c)
    r = np.zeros_like(c) if r is None else as_operand(r)
    if np.ndim(c) > 1 or np.ndim(r) > 1:
        warnings.warn("Beginning in SciPy 1.19, multidimensional input will be treated as a "
                      "batch, not `ravel`ed. To preserve the existing behavior and silence "
                      "this warning, `ravel` arguments before passing them to `hankel`.",
                      FutureWarning, stacklevel=3)
        c, r = np.ravel(c), np.ravel(r)
    m, n = np.shape(c)[0], np.shape(r)[0]
    values = np.concatenate([c, r[1:]])
    return values[np.arange(m)[:, None] + np.arange(n)]


# -- banded solves ------------------------------------------------------------------------------

def _banded_shapes(ab, b, function):
    _one_system(ab, b, function)
    if np.shape(ab)[-1] != np.shape(b)[0]:
        raise ValueError("shapes of ab and b are not compatible.")


def _from_band(ab, rows, columns, inside):
    """The dense matrix of band storage: ab[rows[i, j], columns[i, j]] inside the band, 0
    outside (a constant gather: the unused corners of ab are not read)."""
    return np.where(inside, as_operand(ab)[np.where(inside, rows, 0), columns], 0.0)


def _scipy_solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False,
                        check_finite=True):
    nlower, nupper = l_and_u
    _banded_shapes(ab, b, "solve_banded")
    if nlower + nupper + 1 != np.shape(ab)[0]:
        raise ValueError(
            f"invalid values for the number of lower and upper diagonals: l+u+1 "
            f"({nlower + nupper + 1}) does not equal ab.shape[0] ({np.shape(ab)[0]})")
    n = np.shape(ab)[-1]
    offset = np.arange(n)[:, None] - np.arange(n)    # i - j: a[i, j] = ab[u + i - j, j]
    dense = _from_band(ab, nupper + offset, np.broadcast_to(np.arange(n), (n, n)),
                       (-nupper <= offset) & (offset <= nlower))
    # a dense solve: O(n^3) in the matrix's size
    return np.linalg.solve(dense, as_operand(b))


def _scipy_solveh_banded(ab, b, overwrite_ab=False, overwrite_b=False, lower=False,
                         check_finite=True):
    _banded_shapes(ab, b, "solveh_banded")
    n, u = np.shape(ab)[-1], np.shape(ab)[0] - 1
    i, j = np.arange(n)[:, None], np.arange(n)
    distance = np.abs(i - j)
    # the stored triangle, mirrored: lower form a[i, j] = ab[i - j, j] (i >= j), upper form
    # a[i, j] = ab[u + i - j, j] (i <= j)
    if lower:
        rows, columns = distance, np.minimum(i, j)
    else:
        rows, columns = u - distance, np.maximum(i, j)
    dense = _from_band(ab, rows, columns, distance <= u)
    # through the Cholesky factor, as LAPACK's pbsv (LinAlgError unless positive definite);
    # dense solves: O(n^3) in the matrix's size
    low = np.linalg.cholesky(dense)
    return np.linalg.solve(matrix_transpose(low), np.linalg.solve(low, as_operand(b)))


SCIPY_LINALG = {
    "lstsq": _scipy_lstsq,
    "pinv": _scipy_pinv,
    "eigh": _scipy_eigh,
    "eigvalsh": _scipy_eigvalsh,
    "eig": _scipy_eig,
    "eigvals": _scipy_eigvals,
    "svd": _scipy_svd,
    "svdvals": _scipy_svdvals,
    "qr": _scipy_qr,
    "norm": _scipy_norm,
    "block_diag": _scipy_block_diag,
    "toeplitz": _scipy_toeplitz,
    "circulant": _scipy_circulant,
    "hankel": _scipy_hankel,
    "solve_banded": _scipy_solve_banded,
    "solveh_banded": _scipy_solveh_banded,
}

"""SciPy's functions outside NumPy's dispatch, on cyad's arrays.

SciPy's Python functions (scipy.linalg.expm, scipy.special.logsumexp, ...) call
np.asarray on their arguments, so an engine's array never reaches a NumPy function cyad
knows. `SCIPY_FUNCTIONS` maps each supported one, by module and name, to a function of
SciPy's signature that computes the same on engine arrays;
`cyad._primitives.scipy_dispatch` puts them in SciPy's modules. They are of two kinds:

- compositions of table operations, where SciPy's function is one (logsumexp, softmax,
  log_softmax, polygamma, multigammaln; spherical_jn, spherical_yn, spherical_in and
  spherical_kn through their private ufuncs, rules of the rule table; solve, inv, det,
  cholesky and cho_factor through NumPy's linalg; cho_solve and lu_solve through triangular
  solves): their derivatives are the table's, at every order. Their values on engine arrays
  are NumPy's LAPACK calls rather than SciPy's (equal up to rounding);
- custom functions (`cyad.custom_derivative`) whose rules are written in table
  operations and in the custom functions themselves, so they compose to every order:
  `expm` (the JVP is the corner block of the expm of [[A, E], [0, A]], the VJP the same
  with A^T and the cotangent: exact, Mathias/Higham), `solve_triangular` (the triangle
  SciPy reads, unit_diagonal's diagonal excluded), and `lu_factor`'s packed factors
  (dL = L tril(X, -1), dU = triu(X) U with X = inv(L) P^T dA inv(U)), whose pivots are
  a value-only function (an engine that records f checks them on every replay).

Conventions where SciPy reads a part of a matrix: solve(assume_a="sym"/"pos"),
cholesky and cho_factor read one triangle (the upper by default, ``lower=True`` the
lower one) and differentiate the symmetric matrix made from it; cho_factor's result
holds the factor in that triangle and the input's entries in the other (SciPy leaves
them there; their derivative is the input's); cho_solve and lu_solve read only the
factor's triangles. solve_triangular, lu_factor, lu_solve and cho_solve take one square
matrix (2-D) here.

scipy.linalg's decompositions, least squares, norms, special matrices and banded solves
(lstsq, pinv, eigh, eigvalsh, eig, eigvals, svd, svdvals, qr, norm, block_diag, toeplitz,
circulant, hankel, solve_banded, solveh_banded) are compositions in `scipy_linalg`.
scipy.fft and scipy.signal's FFT convolutions are in `scipy_fourier`, scipy.signal's direct
convolutions, filters and smoothing in `scipy_signal` (whose convolve and correlate take the
FFT ones' place, and call them where SciPy computes by FFT): this table takes them in.
scipy.stats' zscore and entropy are in `scipy_stats`, with its distributions.

SciPy is imported when a function first runs, so cyad imports without it.
"""
import numpy as np

from cyad._primitives.custom import custom_derivative, value_only
from cyad._primitives._table import is_engine_array, matrix_transpose
from cyad._primitives.scipy_fourier import SCIPY_FOURIER
from cyad._primitives.scipy_linalg import SCIPY_LINALG
from cyad._primitives.scipy_signal import SCIPY_SIGNAL
from cyad._primitives.scipy_stats import SCIPY_STATS


def _linalg():
    import scipy.linalg
    return scipy.linalg


def _special():
    import scipy.special
    return scipy.special


def _lanes_as_columns(solve, r):
    """solve(rhs) of r with a leading axis of lanes, the lanes as extra columns of one
    right-hand side (r: (L, n) or (L, n, k))."""
    moved = np.moveaxis(r, 0, -1)     # (n, L) or (n, k, L)
    flat = np.reshape(moved, (moved.shape[0], -1))
    return np.moveaxis(np.reshape(solve(flat), moved.shape), -1, 0)


# -- expm ------------------------------------------------------------------------------

def _expm_value(a):
    return _linalg().expm(a)


expm = custom_derivative(_expm_value, lanes=True)


def _corner(a, e):
    """The upper right block of expm([[a, e], [0, a]]): the Frechet derivative of expm at a
    in the direction e (a broadcast against e's leading axes)."""
    n = a.shape[-1]
    a = np.broadcast_to(a, e.shape)
    top = np.concatenate([a, e], axis=-1)
    bottom = np.concatenate([np.zeros_like(a), a], axis=-1)
    return expm(np.concatenate([top, bottom], axis=-2))[..., :n, n:]


@expm.defjvp
def _expm_jvp(primals, tangents):
    (a,), (t,) = primals, tangents
    return expm(a), _corner(a, t)


@expm.defvjp
def _expm_vjp(primals, cotangent):
    (a,) = primals
    return (_corner(matrix_transpose(a), cotangent),)


# -- triangular solves -----------------------------------------------------------------------

def _triangle(n, dtype, lower, unit_diagonal):
    """The mask of the entries SciPy reads: a triangle, without the diagonal if unit."""
    mask = np.tri(n, k=-1 if unit_diagonal else 0, dtype=dtype)
    return mask if lower else mask.T


def _solve_triangular_value(a, b, *, trans, lower, unit_diagonal):
    return _linalg().solve_triangular(a, b, trans=trans, lower=lower,
                                      unit_diagonal=unit_diagonal)


solve_triangular = custom_derivative(_solve_triangular_value, lanes=True)


def _times(m, x, vector):
    # m @ x for x a vector (lanes of m leading) or a matrix
    return np.matmul(m, x[..., None])[..., 0] if vector else np.matmul(m, x)


@solve_triangular.defjvp
def _solve_triangular_jvp(primals, tangents, *, trans, lower, unit_diagonal):
    # op(M) x = b: d x = op(M)^-1 (db - op(dM) x), dM the read part of dA
    (a, b), (ta, tb) = primals, tangents
    options = dict(trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    x = solve_triangular(a, b, **options)
    vector = np.ndim(b) == 1
    r = tb
    if ta is not None:
        dm = ta * _triangle(a.shape[-1], a.dtype, lower, unit_diagonal)
        product = _times(matrix_transpose(dm) if trans else dm, x, vector)
        r = -product if r is None else r - product
    if np.shape(r)[1:] != np.shape(x):
        r = np.broadcast_to(r, np.shape(r)[:1] + np.shape(x))
    return x, _lanes_as_columns(lambda rhs: solve_triangular(a, rhs, **options), r)


@solve_triangular.defvjp
def _solve_triangular_vjp(primals, cotangent, *, trans, lower, unit_diagonal):
    a, b = primals
    x = solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    gb = solve_triangular(a, cotangent, trans=1 - trans, lower=lower,
                          unit_diagonal=unit_diagonal)
    if np.ndim(b) == 1:
        outer = gb[:, None] * x[None, :]
    else:
        outer = np.matmul(gb, matrix_transpose(x))
    gm = -(matrix_transpose(outer) if trans else outer)
    return gm * _triangle(a.shape[-1], a.dtype, lower, unit_diagonal), gb


# -- LU ----------------------------------------------------------------------------------

def _permutation(piv):
    """The rows of A in the order of P^T A = L U, from LAPACK's row interchanges."""
    perm = np.arange(len(piv))
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm


def _lu_pivots_value(a):
    return _linalg().lu_factor(a)[1]


lu_pivots = value_only(_lu_pivots_value)


def _lu_value(a, *, piv):
    return _linalg().lu_factor(a)[0]


lu_packed = custom_derivative(_lu_value, lanes=True)


def _unit_lower(lu):
    n = lu.shape[-1]
    return lu * np.tri(n, k=-1, dtype=lu.dtype) + np.eye(n, dtype=lu.dtype)


def _upper(lu):
    return lu * np.tri(lu.shape[-1], dtype=lu.dtype).T


def _solves(lu, r, trans):
    """inv(L) r inv(U) (trans=0) or inv(L)^T r inv(U)^T (trans=1), r with lanes leading."""
    unit = dict(lower=True, unit_diagonal=True)
    left = _lanes_as_columns(lambda rhs: solve_triangular(lu, rhs, trans=trans, **unit), r)
    # (Y inv(U))^T = inv(U)^T Y^T: the columns of Y^T solved with U (transposed)
    moved = matrix_transpose(left)
    right = _lanes_as_columns(
        lambda rhs: solve_triangular(lu, rhs, trans=1 - trans, lower=False,
                                     unit_diagonal=False), moved)
    return matrix_transpose(right)


@lu_packed.defjvp
def _lu_jvp(primals, tangents, *, piv):
    (a,), (t,) = primals, tangents
    lu = lu_packed(a, piv=piv)
    n = a.shape[-1]
    x = _solves(lu, t[:, _permutation(piv), :], 0)
    strict = np.tri(n, k=-1, dtype=lu.dtype)
    d_lower = np.matmul(_unit_lower(lu), x * strict)
    d_upper = np.matmul(x * (1 - strict), _upper(lu))
    return lu, d_lower + d_upper


@lu_packed.defvjp
def _lu_vjp(primals, cotangent, *, piv):
    (a,) = primals
    lu = lu_packed(a, piv=piv)
    n = a.shape[-1]
    strict = np.tri(n, k=-1, dtype=lu.dtype)
    gx = (np.matmul(matrix_transpose(_unit_lower(lu)), cotangent * strict) * strict
          + np.matmul(cotangent * (1 - strict), matrix_transpose(_upper(lu))) * (1 - strict))
    y = _solves(lu, gx[None], 1)[0]
    return (y[np.argsort(_permutation(piv)), :],)


def _one_square_matrix(a, function):
    shape = np.shape(a)
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"cyad: scipy.linalg.{function} takes one square matrix (2-D) on "
                         f"cyad's arrays, not an array of shape {shape}")


def _scipy_lu_factor(a, overwrite_a=False, check_finite=True):
    _one_square_matrix(a, "lu_factor")
    piv = lu_pivots(a)
    return lu_packed(a, piv=np.asarray(piv)), piv


def _scipy_lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    lu, piv = lu_and_piv
    _one_square_matrix(lu, "lu_solve")
    perm = _permutation(np.asarray(piv))
    trans = _trans(trans)
    if trans == 0:    # L U x = P^T b
        y = solve_triangular(lu, b[perm], trans=0, lower=True, unit_diagonal=True)
        return solve_triangular(lu, y, trans=0, lower=False, unit_diagonal=False)
    # U^T L^T P^T x = b
    z = solve_triangular(lu, b, trans=1, lower=False, unit_diagonal=False)
    w = solve_triangular(lu, z, trans=1, lower=True, unit_diagonal=True)
    return w[np.argsort(perm)]


# -- Cholesky and symmetric solves ---------------------------------------------------------------

def _is_complex(a):
    from cyad._complex.array import is_complex
    return is_complex(a)


def _symmetric(a, lower, hermitian=False):
    """The symmetric matrix of the triangle of a that SciPy reads (for a complex a and
    `hermitian`, the Hermitian one, of the diagonal's real part, as LAPACK reads it)."""
    if hermitian and _is_complex(a):
        from cyad._complex.linalg import hermitian_of
        return hermitian_of(a, lower)
    n = a.shape[-1]
    read = np.tri(n, dtype=a.dtype) if lower else np.tri(n, dtype=a.dtype).T
    strict = read - np.eye(n, dtype=a.dtype)
    return a * read + matrix_transpose(a * strict)


def _lower_factor(a, lower):
    return np.linalg.cholesky(_symmetric(a, lower, hermitian=True))


def _scipy_cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    low = _lower_factor(a, lower)
    if lower:
        return low
    return np.conjugate(matrix_transpose(low)) if _is_complex(low) else matrix_transpose(low)


def _scipy_cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    factor = _scipy_cholesky(a, lower)
    n = a.shape[-1]
    read = np.tri(n, dtype=a.dtype) if lower else np.tri(n, dtype=a.dtype).T
    return factor * read + a * (1 - read), lower


def _scipy_cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    c, lower = c_and_lower
    _one_square_matrix(c, "cho_solve")
    # A = L L^T (lower) or U^T U: two triangular solves with the factor's triangle
    first, second = (0, 1) if lower else (1, 0)
    y = solve_triangular(c, b, trans=first, lower=lower, unit_diagonal=False)
    return solve_triangular(c, y, trans=second, lower=lower, unit_diagonal=False)


def _trans(trans):
    codes = {0: 0, 1: 1, 2: 1, "N": 0, "T": 1, "C": 1}
    if trans not in codes:
        raise ValueError(f"cyad: trans must be one of 0, 1, 2, 'N', 'T', 'C', not {trans!r}")
    return codes[trans]


def _scipy_solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                            check_finite=True):
    _one_square_matrix(a, "solve_triangular")
    return solve_triangular(a, b, trans=_trans(trans), lower=bool(lower),
                            unit_diagonal=bool(unit_diagonal))


def _scipy_solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, check_finite=True,
                 assume_a=None, transposed=False):
    if assume_a in ("sym", "her", "pos", "symmetric", "hermitian", "positive definite"):
        a = _symmetric(a, lower, hermitian=assume_a not in ("sym", "symmetric"))
    elif assume_a not in (None, "gen", "general"):
        raise ValueError(f"cyad: scipy.linalg.solve with assume_a={assume_a!r} is not "
                         "supported on cyad's arrays (use 'gen', 'sym', 'her' or 'pos')")
    if transposed:
        a = matrix_transpose(a)
    return np.linalg.solve(a, b)


def _scipy_inv(a, overwrite_a=False, check_finite=True):
    return np.linalg.inv(a)


def _scipy_det(a, overwrite_a=False, check_finite=True):
    return np.linalg.det(a)


def _scipy_expm(A):
    return expm(A)


# -- scipy.special -------------------------------------------------------------------------

def _scipy_logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    # log(sum(b exp(a))) shifted by the largest a (the shift cancels, also in derivatives)
    shift = np.max(a, axis=axis, keepdims=True)
    terms = np.exp(a - shift)
    if b is not None:
        terms = b * terms
    total = np.sum(terms, axis=axis, keepdims=True)
    sign = np.sign(total)
    result = np.log(np.abs(total)) + shift
    if not keepdims:
        result = np.squeeze(result, axis=axis)
        sign = np.squeeze(sign, axis=axis)
    if return_sign:
        return result, sign
    return result


def _scipy_softmax(x, axis=None):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def _scipy_log_softmax(x, axis=None):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _scipy_polygamma(n, x):
    special = _special()
    n = np.asarray(n)
    if n.dtype.kind not in "biu" and not np.all(n == np.round(n)):
        raise ValueError("cyad: scipy.special.polygamma's order n must be integral")
    if np.all(n == 0):
        return special.psi(x)
    # (-1)^(n+1) n! zeta(n + 1, x), where n > 0 (zeta's order kept finite where n = 0)
    s = np.where(n == 0, 2.0, n + 1.0)
    higher = (-1.0) ** (n + 1) * special.gamma(n + 1.0) * special._ufuncs._zeta(s, x)
    return np.where(n == 0, special.psi(x), higher) if np.any(n == 0) else higher


def _scipy_multigammaln(a, d):
    # SciPy's sum: d (d - 1) / 4 log(pi) + the sum over j < d of gammaln(a - j / 2)
    special = _special()
    d = np.asarray(d)[()]
    if not np.isscalar(d) or (np.floor(d) != d):
        raise ValueError("d should be a positive integer (dimension)")
    if np.any(a <= 0.5 * (d - 1)):
        raise ValueError(f"condition a > 0.5 * (d-1) ({0.5 * (d - 1)}) not met")
    total = special.gammaln(a)
    for j in range(1, int(d)):
        total = total + special.gammaln(a - 0.5 * j)
    return (d * (d - 1) * 0.25) * np.log(np.pi) + total


def _spherical_bessel(name):
    """scipy.special.spherical_jn (yn, in, kn) in z: its private ufuncs, rules of the rule
    table that compute it at every real z (SciPy's reflection below 0 included); the
    derivative=True ones for derivative=True. Its order n is a constant."""
    def spherical(n, z, derivative=False):
        if is_engine_array(n):
            raise TypeError(f"cyad: scipy.special.{name} is differentiable in z only; its "
                            "order n must be a constant integer, not a dual or traced array")
        if not is_engine_array(z):   # (a rule's composed partial of plain arrays)
            return getattr(_special(), name)(n, z, derivative)
        if _is_complex(z):
            raise TypeError(f"cyad: scipy.special.{name} of a complex z is not supported on "
                            "cyad's arrays (its rules are real)")
        order = np.asarray(n)
        np.asarray(order, dtype=np.dtype("long"))   # SciPy's conversion of n: its errors
        # (n as given: the rule truncates it, and takes the reflection's sign from it, as SciPy)
        ufunc = getattr(_special()._ufuncs, f"_{name}_d" if derivative else f"_{name}")
        return ufunc(order, z)

    spherical.__name__ = name
    return spherical


SPHERICAL_BESSEL = {name: _spherical_bessel(name)
                    for name in ("spherical_jn", "spherical_yn", "spherical_in", "spherical_kn")}


SCIPY_FUNCTIONS = {
    "scipy.linalg": {
        "expm": _scipy_expm,
        "solve_triangular": _scipy_solve_triangular,
        "lu_factor": _scipy_lu_factor,
        "lu_solve": _scipy_lu_solve,
        "cho_factor": _scipy_cho_factor,
        "cho_solve": _scipy_cho_solve,
        "cholesky": _scipy_cholesky,
        "solve": _scipy_solve,
        "inv": _scipy_inv,
        "det": _scipy_det,
        **SCIPY_LINALG,
    },
    "scipy.special": {
        "logsumexp": _scipy_logsumexp,
        "softmax": _scipy_softmax,
        "log_softmax": _scipy_log_softmax,
        "polygamma": _scipy_polygamma,
        "multigammaln": _scipy_multigammaln,
        **SPHERICAL_BESSEL,
    },
    "scipy.stats": SCIPY_STATS,
    **SCIPY_FOURIER,
}
SCIPY_FUNCTIONS["scipy.signal"] = {**SCIPY_FOURIER["scipy.signal"],
                                   **SCIPY_SIGNAL["scipy.signal"]}

# scipy.linalg's functions of complex matrices too (cyad/_complex/linalg.py; the supported
# functions' complex column), as scipy.fft's mark theirs
for _name in ("expm", "cholesky", "solve", "inv", "det"):
    SCIPY_FUNCTIONS["scipy.linalg"][_name].takes_complex = True


"""numpy.linalg (and scipy.linalg.expm) of complex matrices.

solve and inv map onto the real primitives exactly: A = B + iC acts on x = u + iv as the
real matrix [[B, -C], [C, B]] acts on [u; v], so a complex solve is a real solve of twice
the size and its derivatives are the real solve's, at every order.

The other functions are primitives of their own on the parts (`_Core`): operands and
results are real and imaginary parts, as the Fourier transforms' cores are, so that an
engine records one operation per call. Their rules are JAX's (jax/_src/lax/linalg.py),
written once on complex values: NumPy's complex ndarrays where the rule runs on plain
values, `ComplexArray`s of an engine's arrays where it runs on them (the tape's replays,
the dual engine's nested orders), whose operations reach the engines' own rules, so the
rules compose to every order. A VJP rule is the adjoint of its JVP rule for the real
inner product Re <G, dY> of the parts: JAX's transposes, with conjugate transposes.

- det, slogdet: d det A = det A tr(A^-1 dA); slogdet's sign moves by i Im tr(A^-1 dA).
- eigh, eigvalsh: of the Hermitian matrix made from the triangle NumPy reads (the
  diagonal's real part: LAPACK ignores its imaginary part). The eigenvectors' phases are
  LAPACK's, which no rule describes: their derivative is exact for functions that do not
  depend on those phases (v v^H, |v|^2, the eigenvalues), as JAX's.
- eig, eigvals: distinct eigenvalues; the eigenvectors differentiated through LAPACK's
  normalisation (unit norm, the largest component real), as JAX's, exact but where two
  components tie for the largest. A real matrix with complex eigenvalues comes here too
  (cyad/_primitives/decompositions.py).
- svd: distinct nonzero singular values; U and V are unique up to a phase per column,
  shared between them: the derivative is exact for functions of U S V^H, |U|^2, ... that
  do not depend on it, as JAX's.
- qr: R's diagonal is real (LAPACK's convention), which makes Q and R unique: exact.
- cholesky: exact (the Hermitian matrix of the lower triangle; upper=True the upper one).
- expm: the Frechet derivative as the corner block of expm([[A, E], [0, A]]) (Mathias), its
  adjoint the same at A^H.

Where a derivative does not exist (repeated eigenvalues or singular values, a singular
matrix) the rules raise LinAlgError, as the real ones do.
"""
import numpy as np

from cyad._complex.array import ComplexArray, parts, real_dtype
from cyad._complex.functions import SPECIAL, _complex_array, _special
from cyad._primitives._table import TABLE, Primitive, axes_of, matrix_transpose, shape_of
from cyad._primitives.custom import EntryFunction
from cyad._primitives.decompositions import _qr_mode, _singular_gaps
from cyad._primitives.linalg import _eigen_gaps
from cyad._primitives.scipy_functions import expm as _real_expm

_SLOGDET = type(np.linalg.slogdet(np.eye(1)))
_EIGH = type(np.linalg.eigh(np.eye(1)))
_EIG = type(np.linalg.eig(np.eye(1)))
_SVD = type(np.linalg.svd(np.eye(1)))
_QR = type(np.linalg.qr(np.eye(1)))


# -- complex values: NumPy's complex arrays or ComplexArrays of an engine's arrays --------------

def _is_plain(x):
    return x is None or isinstance(x, (np.ndarray, np.generic, float, int))


def _join(re, im):
    """re + i im: a NumPy complex array where both parts are plain values (None: zero), a
    ComplexArray where one is an engine's array; None where both are None."""
    if re is None and im is None:
        return None
    if _is_plain(re) and _is_plain(im):
        like = re if re is not None else im
        z = np.zeros(np.shape(like), np.complex64 if np.result_type(like) == np.float32
                     else np.complex128)
        if re is not None:
            z.real = re
        if im is not None:
            z.imag = im
        return z
    shape = np.broadcast_shapes(*[shape_of(p) for p in (re, im) if p is not None])
    return ComplexArray(re, im, shape, real_dtype(*[p for p in (re, im) if p is not None]))


def _split(z):
    """The parts of a complex value, zeros for a zero part."""
    if isinstance(z, ComplexArray):
        return z.real, z.imag
    z = np.asarray(z)
    return z.real.copy(), z.imag.copy()


def _split_tangent(t):
    """The parts of a tangent, None for a zero part (or a zero tangent)."""
    if t is None:
        return None, None
    if isinstance(t, ComplexArray):
        return t.re, t.im
    return _split(t)


def _h(x):
    """The conjugate transpose of the last two axes."""
    return np.conjugate(matrix_transpose(x))


def _eye(x):
    """The identity of x's matrices, of the dtype of x's parts."""
    return np.eye(shape_of(x)[-1], dtype=real_dtype(x))


def _diagonal(x):
    """The diagonal of the last two axes (lanes leading)."""
    return np.sum(x * _eye(x), axis=-1)


def _solve_lanes(a, r):
    """solve(a, r) for r (lanes, ..., n, k): all lanes as columns of one right-hand side."""
    moved = np.moveaxis(r, 0, -1)
    shape = shape_of(moved)
    x = np.linalg.solve(a, np.reshape(moved, shape[:-2] + (-1,)))
    return np.moveaxis(np.reshape(x, shape), -1, 0)


# -- primitives on the parts ----------------------------------------------------------------

class _Core:
    """The primitive of a function of one complex matrix, on its parts: `value` of a NumPy
    complex array, and the rules `jvp(a, da, **params)` -> (out, tangent) and `vjp(a, cts,
    **params)` -> A's cotangent on complex values (lanes leading on tangents); `kinds`
    names each output "c" (complex: two parts) or "r" (real). The entry runs them on the
    parts: ``core(re, im, **params)`` gives the outputs' parts, flat."""

    def __init__(self, name, kinds, value, jvp, vjp, bind):
        self.kinds = kinds
        self.function = EntryFunction(Primitive(name, {
            "bind": bind, "impl": self._impl(value), "jvp": self._jvp(jvp),
            "vjp": self._vjp(vjp)}))

    def _flat(self, outputs, params, split):
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        flat = []
        for kind, output in zip(self.kinds(**params), outputs, strict=True):
            if kind == "c":
                flat.extend(split(output))
            else:
                flat.append(output)
        return flat[0] if len(flat) == 1 else tuple(flat)

    def _impl(self, value):
        def impl(re, im, **params):
            outputs = value(_join(np.asarray(re), np.asarray(im)), **params)
            outputs = outputs if isinstance(outputs, tuple) else (outputs,)
            return self._flat(tuple(np.asarray(o) for o in outputs), params, _split)
        return impl

    def _jvp(self, rule):
        def jvp(primals, tangents, **params):
            out, tangent = rule(_join(*primals), _join(*tangents), **params)
            if tangent is None:
                tangent = (None,) * len(self.kinds(**params))
            return self._flat(out, params, _split), self._flat(tangent, params, _split_tangent)
        return jvp

    def _vjp(self, rule):
        def vjp(primals, cotangent, **params):
            flat = iter(cotangent if isinstance(cotangent, tuple) else (cotangent,))
            cts = tuple(_join(next(flat), next(flat)) if kind == "c" else next(flat)
                        for kind in self.kinds(**params))
            ga = rule(_join(*primals), cts if len(cts) > 1 else cts[0], **params)
            return _split_tangent(ga)
        return vjp

    def __call__(self, a, **params):
        """The outputs of `a` (a complex operand), complex ones as ComplexArrays."""
        dtype = real_dtype(a)
        re, im = parts(a)
        shape = shape_of(a)
        flat = self.function(np.zeros(shape, dtype) if re is None else re,
                             np.zeros(shape, dtype) if im is None else im, **params)
        flat = iter(flat if isinstance(flat, tuple) else (flat,))
        outputs = []
        for kind in self.kinds(**params):
            if kind == "c":
                re = next(flat)
                outputs.append(ComplexArray(re, next(flat), shape_of(re), dtype))
            else:
                outputs.append(next(flat))
        return tuple(outputs)


def _core(name, kinds, rules):
    """The `_Core` of a class of rules: its bind, value, jvp and vjp."""
    return _Core(name, kinds, rules.value, rules.jvp, rules.vjp, rules.bind)


def _square(a, name):
    shape = shape_of(a)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise np.linalg.LinAlgError(f"Last 2 dimensions of the array must be square "
                                    f"(numpy.linalg.{name})")


# -- solve and inv: the real block form ----------------------------------------------------------

def _block(a):
    """[[B, -C], [C, B]] of A = B + iC; None where A is real."""
    re, im = parts(a)
    if im is None:
        return None
    if re is None:
        re = np.zeros(shape_of(a), real_dtype(a))
    top = np.concatenate([re, -im], axis=-1)
    return np.concatenate([top, np.concatenate([im, re], axis=-1)], axis=-2)


def _complex_result(re, im, dtype):
    shape = shape_of(re if re is not None else im)
    return ComplexArray(re, im, shape, dtype)


@_special("linalg.solve")
def _solve(a, b):
    """x of A x = b, b a vector where it has one axis (NumPy 2)."""
    _square(a, "solve")
    dtype = real_dtype(a, b)
    block = _block(a)
    (br, bi), vector = parts(b), np.ndim(b) == 1 if not hasattr(b, "ndim") else b.ndim == 1
    if block is None:   # a real matrix: a solve per part of b
        ar = parts(a)[0]
        return _complex_result(None if br is None else np.linalg.solve(ar, br),
                               None if bi is None else np.linalg.solve(ar, bi), dtype)
    n = shape_of(a)[-1]
    zero = np.zeros(shape_of(b), dtype)
    stacked = np.concatenate([zero if br is None else br, zero if bi is None else bi],
                             axis=-1 if vector else -2)
    x = np.linalg.solve(block, stacked)
    if vector:
        return _complex_result(x[..., :n], x[..., n:], dtype)
    return _complex_result(x[..., :n, :], x[..., n:, :], dtype)


@_special("linalg.inv")
def _inv(a):
    _square(a, "inv")
    dtype = real_dtype(a)
    block = _block(a)
    if block is None:
        return _complex_result(np.linalg.inv(parts(a)[0]), None, dtype)
    n = shape_of(a)[-1]
    y = np.linalg.inv(block)   # [[P, -Q], [Q, P]] for inv(A) = P + iQ
    return _complex_result(y[..., :n, :n], y[..., n:, :n], dtype)


# -- det and slogdet ---------------------------------------------------------------------------

def _bind_matrix(re, im):
    return (re, im), {}


def _trace_with_inverse(a, da):
    """tr(A^-1 dA), and A^-1's transpose."""
    k = matrix_transpose(np.linalg.inv(a))
    return np.sum(k * da, axis=(-2, -1)), k


class _DetRules:
    bind = _bind_matrix

    def value(a):
        return np.linalg.det(a)

    def jvp(a, da):
        y = np.linalg.det(a)
        if da is None:
            return y, None
        trace, _ = _trace_with_inverse(a, da)
        return y, y * trace

    def vjp(a, g):
        y = np.linalg.det(a)
        return np.expand_dims(g * np.conjugate(y), (-2, -1)) * _h(np.linalg.inv(a))


_DetCore = _core("det", lambda: "c", _DetRules)


class _SlogdetRules:
    bind = _bind_matrix

    def value(a):
        return tuple(np.linalg.slogdet(a))

    def jvp(a, da):
        sign, logabsdet = np.linalg.slogdet(a)
        if da is None:
            return (sign, logabsdet), None
        trace, _ = _trace_with_inverse(a, da)
        return (sign, logabsdet), (1j * np.imag(trace) * sign, np.real(trace))

    def vjp(a, cts):
        sign, _ = np.linalg.slogdet(a)
        sb, lb = cts
        w = lb - 1j * np.imag(np.conjugate(sb) * sign)
        return np.expand_dims(w, (-2, -1)) * _h(np.linalg.inv(a))


_SlogdetCore = _core("slogdet", lambda: "cr", _SlogdetRules)


@_special("linalg.det")
def _det(a):
    _square(a, "det")
    return _DetCore(a)[0]


@_special("linalg.slogdet")
def _slogdet(a):
    _square(a, "slogdet")
    return _SLOGDET(*_SlogdetCore(a))


# -- Hermitian eigenproblems ----------------------------------------------------------------------

def _triangles(x, uplo):
    """The triangle NumPy reads of x's matrices, without its diagonal, and the diagonal."""
    strict = np.tri(shape_of(x)[-1], k=-1, dtype=real_dtype(x))
    return (strict.T if uplo == "U" else strict), _eye(x)


def _hermitised(t, uplo):
    """The Hermitian matrix of the triangle of t that NumPy reads (lanes leading); of the
    diagonal, its real part (LAPACK's)."""
    strict, eye = _triangles(t, uplo)
    low = t * strict
    return low + _h(low) + eye * np.real(t)


def _hermitised_adjoint(g, uplo):
    strict, eye = _triangles(g, uplo)
    return (g + _h(g)) * strict + eye * np.real(g)


def _uplo(uplo):
    if uplo not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return uplo


def _bind_uplo(re, im, *, uplo):
    return (re, im), {"uplo": uplo}


def _eigh_tangents(a, da, uplo):
    w, v = np.linalg.eigh(a, uplo)
    f = _eigen_gaps(w)
    m = np.matmul(np.matmul(_h(v), _hermitised(da, uplo)), v)
    return w, v, f, m


def _eigh_cotangent(a, wb, vb, uplo):
    w, v = np.linalg.eigh(a, uplo)
    inner = np.expand_dims(wb, -1) * _eye(v)
    if vb is not None:
        inner = inner + _eigen_gaps(w) * np.matmul(_h(v), vb)
    return _hermitised_adjoint(np.matmul(np.matmul(v, inner), _h(v)), uplo)


class _EighRules:
    bind = _bind_uplo

    def value(a, *, uplo):
        return tuple(np.linalg.eigh(a, uplo))

    def jvp(a, da, *, uplo):
        if da is None:
            return tuple(np.linalg.eigh(a, uplo)), None
        w, v, f, m = _eigh_tangents(a, da, uplo)
        return (w, v), (np.real(_diagonal(m)), np.matmul(v, f * m))

    def vjp(a, cts, *, uplo):
        return _eigh_cotangent(a, *cts, uplo)


_EighCore = _core("eigh", lambda uplo: "rc", _EighRules)


class _EigvalshRules:
    bind = _bind_uplo

    def value(a, *, uplo):
        return np.linalg.eigvalsh(a, uplo)

    def jvp(a, da, *, uplo):
        if da is None:
            return np.linalg.eigvalsh(a, uplo), None
        w, _, _, m = _eigh_tangents(a, da, uplo)
        return w, np.real(_diagonal(m))

    def vjp(a, wb, *, uplo):
        return _eigh_cotangent(a, wb, None, uplo)


_EigvalshCore = _core("eigvalsh", lambda uplo: "r", _EigvalshRules)


@_special("linalg.eigh")
def _eigh(a, UPLO="L"):
    _square(a, "eigh")
    return _EIGH(*_EighCore(a, uplo=_uplo(UPLO)))


@_special("linalg.eigvalsh")
def _eigvalsh(a, UPLO="L"):
    _square(a, "eigvalsh")
    return _EigvalshCore(a, uplo=_uplo(UPLO))[0]


# -- general eigenproblems ---------------------------------------------------------------------

def _bind_eig(re, im, *, real):
    return (re, im), {"real": real}


def _eig_of(a, real):
    """w, V of eig(a); `real`: a is a real matrix (NumPy's real LAPACK call, whose order of
    the eigenvalues may differ from the complex one's)."""
    if isinstance(a, np.ndarray):
        return tuple(np.linalg.eig(a.real if real else a))
    return _EigCore(a, real=real)


def _eig_gaps(w):
    """1 / (w_j - w_i) off the diagonal, 0 on it; LinAlgError at repeated eigenvalues."""
    n = shape_of(w)[-1]
    eye = np.eye(n, dtype=bool)
    diff = w[..., None, :] - w[..., :, None]
    if n > 1 and np.min(np.abs(diff)[..., ~eye]) <= (
            n * np.finfo(real_dtype(w)).eps * np.max(np.abs(w))):
        raise np.linalg.LinAlgError(
            "cyad: numpy.linalg.eig/eigvals at repeated eigenvalues: the eigenvectors are not "
            "unique and the eigenvalues not differentiable there")
    identity = np.eye(n, dtype=real_dtype(w))
    return 1.0 / (diff + identity) - identity


def _largest(v):
    """The mask of each column's largest component (LAPACK makes it real), and its value."""
    k = np.argmax(np.abs(v), axis=-2)
    n = shape_of(v)[-2]
    mask = (np.arange(n)[:, None] == np.expand_dims(k, -2)).astype(real_dtype(v))
    return mask, np.real(np.sum(mask * v, axis=-2))


def _eig_tangents(a, da, real, vectors):
    # P = V^-1 dA V: dw = diag(P); dV = V (F o P) + V diag(c), c keeping each column's norm
    # and its largest component real (JAX's _eig_vec_jvp)
    w, v = _eig_of(a, real)
    f = _eig_gaps(w)
    p = _solve_lanes(v, np.matmul(da, v))
    dw = _diagonal(p)
    if not vectors:
        return w, v, dw, None
    u = np.matmul(v, f * p)
    mask, r = _largest(v)
    c = -np.real(np.sum(np.conjugate(v) * u, axis=-2)) - 1j * (
        np.imag(np.sum(mask * u, axis=-2)) / r)
    return w, v, dw, u + v * np.expand_dims(c, -2)


def _eig_cotangent(a, wb, vb, real):
    w, v = _eig_of(a, real)
    g = np.expand_dims(wb, -1) * _eye(v)
    if vb is not None:
        mask, r = _largest(v)
        s = np.sum(np.conjugate(v) * vb, axis=-2)
        gu = (vb - v * np.expand_dims(np.real(s), -2)
              - 1j * (mask * np.expand_dims(np.imag(s) / r, -2)))
        g = g + np.conjugate(_eig_gaps(w)) * np.matmul(_h(v), gu)
    return np.linalg.solve(_h(v), np.matmul(g, _h(v)))


class _EigRules:
    bind = _bind_eig

    def value(a, *, real):
        return _eig_of(a, real)

    def jvp(a, da, *, real):
        if da is None:
            return _eig_of(a, real), None
        w, v, dw, dv = _eig_tangents(a, da, real, vectors=True)
        return (w, v), (dw, dv)

    def vjp(a, cts, *, real):
        return _eig_cotangent(a, *cts, real)


_EigCore = _core("eig", lambda real: "cc", _EigRules)


class _EigvalsRules:
    bind = _bind_eig

    def value(a, *, real):
        return _eig_of(a, real)[0]

    def jvp(a, da, *, real):
        if da is None:
            return _eig_of(a, real)[0], None
        w, _, dw, _ = _eig_tangents(a, da, real, vectors=False)
        return w, dw

    def vjp(a, wb, *, real):
        return _eig_cotangent(a, wb, None, real)


_EigvalsCore = _core("eigvals", lambda real: "c", _EigvalsRules)


@_special("linalg.eig")
def _eig(a):
    _square(a, "eig")
    return _EIG(*_EigCore(a, real=False))


@_special("linalg.eigvals")
def _eigvals(a):
    _square(a, "eigvals")
    return _EigvalsCore(a, real=False)[0]


def eig_of_real(a, vectors):
    """np.linalg.eig (eigvals where not `vectors`) of a real matrix of an engine whose
    eigenvalues are complex."""
    if vectors:
        return _EIG(*_EigCore(a, real=True))
    return _EigvalsCore(a, real=True)[0]


# -- singular values -------------------------------------------------------------------------------

def _bind_svd(re, im, *, compute_uv):
    return (re, im), {"compute_uv": compute_uv}


def _svd_tangents(a, da, vectors):
    """U, s, Vh and their tangents (the vectors' None unless `vectors`); JAX's rule, whose
    imaginary diagonal term ties U's phases to V's."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    f = _singular_gaps(s, shape_of(a))
    v = _h(vh)
    ds_matrix = np.matmul(np.matmul(_h(u), da), v)
    ds = np.real(_diagonal(ds_matrix))
    if not vectors:
        return u, s, vh, ds, None, None
    row, column = s[..., None, :], s[..., :, None]
    d_s, s_d = ds_matrix * row, column * ds_matrix
    du = np.matmul(u, f * (d_s + _h(d_s)) + _eye(u) * (ds_matrix - _h(ds_matrix)) / (2 * row))
    dv = np.matmul(v, f * (s_d + _h(s_d)))
    m, n = shape_of(a)[-2:]
    if m > n:
        av = np.matmul(da, v)
        du = du + (av - np.matmul(u, np.matmul(_h(u), av))) / row
    if n > m:
        au = np.matmul(_h(da), u)
        dv = dv + (au - np.matmul(v, np.matmul(vh, au))) / row
    return u, s, vh, ds, du, _h(dv)


def _svd_cotangent(a, ub, sb, vhb):
    """The adjoint of _svd_tangents; ub and vhb None for the values alone."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    f = _singular_gaps(s, shape_of(a))
    row, column = s[..., None, :], s[..., :, None]
    eye = _eye(u)
    inner = np.expand_dims(sb, -1) * eye
    if ub is not None:
        utub = np.matmul(_h(u), ub)
        fa = f * utub
        inner = inner + (fa + _h(fa)) * row + eye * (utub - _h(utub)) / (2 * row)
    if vhb is not None:
        vb, v = _h(vhb), _h(vh)
        vtvb = np.matmul(vh, vb)
        fb = f * vtvb
        inner = inner + column * (fb + _h(fb))
    g = np.matmul(np.matmul(u, inner), vh)
    m, n = shape_of(a)[-2:]
    if ub is not None and m > n:
        g = g + np.matmul((ub - np.matmul(u, utub)) / row, vh)
    if vhb is not None and n > m:
        g = g + np.matmul(u, _h((vb - np.matmul(v, vtvb)) / row))
    return g


class _SvdRules:
    bind = _bind_svd

    def value(a, *, compute_uv):
        result = np.linalg.svd(a, full_matrices=False, compute_uv=compute_uv)
        return tuple(result) if compute_uv else result

    def jvp(a, da, *, compute_uv):
        if da is None:
            return _SvdCore.value(a, compute_uv=compute_uv), None
        u, s, vh, ds, du, dvh = _svd_tangents(a, da, compute_uv)
        return ((u, s, vh), (du, ds, dvh)) if compute_uv else (s, ds)

    def vjp(a, cts, *, compute_uv):
        if not compute_uv:
            return _svd_cotangent(a, None, cts, None)
        return _svd_cotangent(a, *cts)


_SvdCore = _core("svd", lambda compute_uv: "crc" if compute_uv else "r", _SvdRules)


@_special("linalg.svd")
def _svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    m, n = shape_of(a)[-2:]
    if compute_uv and full_matrices and m != n:
        raise np.linalg.LinAlgError(
            "cyad: numpy.linalg.svd with full_matrices=True of a non-square matrix is not "
            "differentiable: the singular vectors beyond the matrix's rank are not unique; "
            "pass full_matrices=False")
    if hermitian:
        raise TypeError("cyad: numpy.linalg.svd(hermitian=True) of complex matrices is not "
                        "supported; pass hermitian=False")
    outputs = _SvdCore(a, compute_uv=bool(compute_uv))
    return _SVD(*outputs) if compute_uv else outputs[0]


@_special("linalg.svdvals")
def _svdvals(x, /):
    return _SvdCore(x, compute_uv=False)[0]


# -- QR --------------------------------------------------------------------------------------------

def _bind_qr(re, im, *, mode):
    return (re, im), {"mode": mode}


def _strictly_lower(x):
    return np.tri(shape_of(x)[-1], k=-1, dtype=real_dtype(x))


def _qr_square_jvp(q, r, t):
    """dQ, dR of a matrix of as many or more rows than columns (JAX's rule: Q^H dQ is skew
    Hermitian with a diagonal that keeps R's diagonal real)."""
    x = _h(_solve_lanes(_h(r), _h(t)))   # dA R^-1
    c = np.matmul(_h(q), x)
    low = c * _strictly_lower(r)
    omega = low - _h(low) + _eye(r) * (1j * np.imag(c))
    return np.matmul(q, omega - c) + x, np.matmul(c - omega, r)


def _qr_square_vjp(q, r, qb, rb):
    m = -np.matmul(rb, _h(r))
    if qb is not None:
        m = m + np.matmul(_h(q), qb)
    gc = (m - _h(m)) * _strictly_lower(r) + _eye(r) * (1j * np.imag(m)) - m
    y = np.matmul(q, gc)
    if qb is not None:
        y = y + qb
    return _h(np.linalg.solve(r, _h(y)))   # y R^-H


class _QrRules:
    bind = _bind_qr

    def value(a, *, mode):
        result = np.linalg.qr(a, mode)
        return result if mode == "r" else tuple(result)

    def jvp(a, da, *, mode):
        q, r = np.linalg.qr(a)
        if da is None:
            return (r if mode == "r" else (q, r)), None
        m = shape_of(a)[-2]
        if m >= shape_of(a)[-1]:
            dq, dr = _qr_square_jvp(q, r, da)
        else:   # A = Q [R1 R2]: Q, R1 the QR of A's first m columns, R2 = Q^H A2
            dq, dr1 = _qr_square_jvp(q, r[..., :m], da[..., :m])
            dr2 = np.matmul(_h(dq), a[..., m:]) + np.matmul(_h(q), da[..., m:])
            dr = np.concatenate([dr1, dr2], axis=-1)
        return (r, dr) if mode == "r" else ((q, r), (dq, dr))

    def vjp(a, cts, *, mode):
        q, r = np.linalg.qr(a)
        qb, rb = (None, cts) if mode == "r" else cts
        m = shape_of(a)[-2]
        if m >= shape_of(a)[-1]:
            return _qr_square_vjp(q, r, qb, rb)
        a2, rb1, rb2 = a[..., m:], rb[..., :m], rb[..., m:]
        extra = np.matmul(a2, _h(rb2))   # R2 = Q^H A2: Q's cotangent A2 rb2^H
        qb = extra if qb is None else qb + extra
        return np.concatenate([_qr_square_vjp(q, r[..., :m], qb, rb1), np.matmul(q, rb2)],
                              axis=-1)


_QrCore = _core("qr", lambda mode: "c" if mode == "r" else "cc", _QrRules)


@_special("linalg.qr")
def _qr(a, mode="reduced"):
    mode = _qr_mode(mode, shape_of(a))
    outputs = _QrCore(a, mode=mode)
    return outputs[0] if mode == "r" else _QR(*outputs)


# -- Cholesky --------------------------------------------------------------------------------------

def _bind_cholesky(re, im, *, upper):
    return (re, im), {"upper": upper}


def _phi(m):
    """The lower triangle with half the diagonal."""
    return m * (_strictly_lower(m) + 0.5 * _eye(m))


class _CholeskyRules:
    """L of the Hermitian matrix of the lower triangle, dL = L phi(L^-1 dS L^-H); upper=True
    reads the upper triangle of A, the lower one of A^H: U = L^H of that."""

    bind = _bind_cholesky

    def value(a, *, upper):
        return np.linalg.cholesky(a, upper=upper)

    def jvp(a, da, *, upper):
        if upper:
            a, da = _h(a), (None if da is None else _h(da))
        low = np.linalg.cholesky(a)
        if da is None:
            return (_h(low) if upper else low), None
        li = np.linalg.inv(low)
        dl = np.matmul(low, _phi(np.matmul(np.matmul(li, _hermitised(da, "L")), _h(li))))
        return (_h(low), _h(dl)) if upper else (low, dl)

    def vjp(a, g, *, upper):
        if upper:
            a, g = _h(a), _h(g)
        low = np.linalg.cholesky(a)
        li = np.linalg.inv(low)
        p = _phi(np.matmul(_h(low), g))
        ga = _hermitised_adjoint(np.matmul(np.matmul(_h(li), p), li), "L")
        return _h(ga) if upper else ga


_CholeskyCore = _core("cholesky", lambda upper: "c", _CholeskyRules)


@_special("linalg.cholesky")
def _cholesky(a, /, *, upper=False):
    _square(a, "cholesky")
    return _CholeskyCore(a, upper=bool(upper))[0]


def hermitian_of(a, lower):
    """The Hermitian matrix of the triangle of a that SciPy reads (lower or upper)."""
    return _hermitised(a, "L" if lower else "U")


# -- the matrix exponential ------------------------------------------------------------------------

def _expm(a):
    if isinstance(a, np.ndarray):
        import scipy.linalg
        return scipy.linalg.expm(a)
    return _ExpmCore(a)[0]


def _corner(a, e):
    """The upper right block of expm([[a, e], [0, a]]): expm's Frechet derivative at a in
    the direction e (a broadcast against e's leading axes)."""
    n = shape_of(a)[-1]
    a = np.broadcast_to(a, shape_of(e))
    top = np.concatenate([a, e], axis=-1)
    bottom = np.concatenate([np.zeros(shape_of(a), real_dtype(a)), a], axis=-1)
    return _expm(np.concatenate([top, bottom], axis=-2))[..., :n, n:]


class _ExpmRules:
    bind = _bind_matrix

    def value(a):
        return _expm(a)

    def jvp(a, da):
        return _expm(a), (None if da is None else _corner(a, da))

    def vjp(a, g):
        return _corner(_h(a), g)


_ExpmCore = _core("expm", lambda: "c", _ExpmRules)


def _scipy_expm(a):
    _square(a, "expm")
    return _ExpmCore(a)[0]


SPECIAL[_real_expm] = _scipy_expm   # scipy.linalg.expm on cyad's arrays calls _real_expm


# -- norms -------------------------------------------------------------------------------------

@_special("linalg.norm")
def _norm(x, ord=None, axis=None, keepdims=False):
    """The norms of |x|, the 2-norm and Frobenius norm as sqrt(sum(re^2 + im^2)) (smooth
    where an element is 0), the matrix norms of ord 2, -2 and 'nuc' of the singular values."""
    z = _complex_array(x)
    axes = axes_of(axis, z.ndim)
    if len(axes) == 2 and ord in (2, -2, "nuc"):
        return TABLE[np.linalg.norm].impl(z, ord, axis, keepdims)
    if ord is None or (len(axes) == 1 and ord == 2) or (len(axes) == 2 and ord in ("fro", "f")):
        if axis is None and ord is not None and z.ndim not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
        return np.sqrt(np.sum(z.real * z.real + z.imag * z.imag, axes, keepdims=keepdims))
    return np.linalg.norm(np.abs(z), ord, axis, keepdims)

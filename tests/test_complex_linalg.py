"""numpy.linalg (and scipy.linalg's solve, inv, det, cholesky, expm) of complex matrices
inside f (cyad._complex.linalg), on both engines, against JAX: values, Jacobians (forward
mode), gradients (the tape's reverse mode: the VJP rules) and Hessians, float64 and
float32; real matrices with complex eigenvalues through np.linalg.eig; and the refusals.

Eigenvectors and singular vectors are tested through functions of them that NumPy's and
JAX's choices of phase agree on (|v|^2, U S V^H), except eig's, whose phase both take from
LAPACK's normalisation (the largest component real), so that their real parts are tested too.
"""
import numpy as np
import pytest
from derivative_references import (
    as_real_program,
    assert_matches,
    loosest,
    named_references,
    seeded,
)
from scenarios import ENGINES

import cyad

pytestmark = pytest.mark.xdist_group("test_complex_linalg")

scipy_linalg = pytest.importorskip("scipy.linalg")

N = 18
_B = seeded("complex-linalg-constants").standard_normal((2, 3, 3))
B = _B[0] + 1j * _B[1]
_REAL_ROTATION = np.array([[0.0, 2.0, 0.0], [-2.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def _a(xp, x):
    """A well-conditioned complex 3 x 3 matrix of x."""
    return xp.reshape(x[:9] + 1j * x[9:], (3, 3)) + 3.0 * xp.eye(3)


def _hermitian(xp, x):
    a = _a(xp, x)
    return a @ xp.conj(a.T) + xp.eye(3)


def _rect(xp, x, m, n):
    return xp.reshape(x[:m * n] + 1j * x[m * n:2 * m * n], (m, n))


def _sl(xp):
    if xp is np:
        return scipy_linalg
    import jax.scipy.linalg
    return jax.scipy.linalg


def _eig(xp, a):
    if xp is np:
        return np.linalg.eig(a)
    import jax
    w, v = jax.lax.linalg.eig(a, compute_left_eigenvectors=False, enable_eigvec_derivs=True)
    return w, v


def _svd(xp, a):
    u, s, vh = xp.linalg.svd(a, full_matrices=False)
    return xp.concatenate([xp.abs(u).ravel() ** 2, s, xp.abs(vh).ravel() ** 2,
                           (u * s[None, :] @ vh).ravel()])


def _cholesky_upper(xp, a):
    return np.linalg.cholesky(a, upper=True) if xp is np else xp.conj(xp.linalg.cholesky(a).T)


# (name, function of (xp, x) -> a complex or real array)
FUNCTIONS = {
    "linalg.solve": lambda xp, x: xp.linalg.solve(_a(xp, x), B[0]),
    "linalg.solve-matrix": lambda xp, x: xp.linalg.solve(_a(xp, x), B @ _a(xp, x[::-1])),
    "linalg.solve-real-matrix": lambda xp, x: xp.linalg.solve(
        xp.reshape(x[:9], (3, 3)) + 3.0 * xp.eye(3), x[9:12] * (1 - 2j)),
    "linalg.inv": lambda xp, x: xp.linalg.inv(_a(xp, x)),
    "linalg.det": lambda xp, x: xp.linalg.det(_a(xp, x)),
    "linalg.slogdet": lambda xp, x: xp.stack([xp.linalg.slogdet(_a(xp, x))[0],
                                              xp.linalg.slogdet(_a(xp, x))[1] + 0j]),
    "linalg.eigvalsh": lambda xp, x: xp.linalg.eigvalsh(_hermitian(xp, x)),
    "linalg.eigh": lambda xp, x: xp.concatenate([
        xp.linalg.eigh(_hermitian(xp, x))[0],
        xp.abs(xp.linalg.eigh(_hermitian(xp, x))[1]).ravel() ** 2]),
    "linalg.eigh-projector": lambda xp, x: (lambda v: v[:, :1] @ xp.conj(v[:, :1].T))(
        xp.linalg.eigh(_hermitian(xp, x), UPLO="U")[1]),
    "linalg.eigvals": lambda xp, x: (np.linalg.eigvals(_a(np, x)) if xp is np
                                     else _eig(xp, _a(xp, x))[0]),
    "linalg.eig": lambda xp, x: xp.concatenate(
        [_eig(xp, _a(xp, x))[0], _eig(xp, _a(xp, x))[1].ravel()]),
    "linalg.eig-real-matrix": lambda xp, x: xp.concatenate([
        _eig(xp, xp.reshape(x[:9], (3, 3)) + _REAL_ROTATION)[0],
        _eig(xp, xp.reshape(x[:9], (3, 3)) + _REAL_ROTATION)[1].ravel()]),
    "linalg.eigvals-real-matrix": lambda xp, x: (
        np.linalg.eigvals(np.reshape(x[:9], (3, 3)) + _REAL_ROTATION) if xp is np
        else _eig(xp, xp.reshape(x[:9], (3, 3)) + _REAL_ROTATION)[0]),
    "linalg.svd": lambda xp, x: _svd(xp, _a(xp, x)),
    "linalg.svd-tall": lambda xp, x: _svd(xp, _rect(xp, x, 3, 2)),
    "linalg.svd-wide": lambda xp, x: _svd(xp, _rect(xp, x, 2, 3)),
    "linalg.svd-values": lambda xp, x: xp.linalg.svd(_rect(xp, x, 3, 2), compute_uv=False),
    "linalg.svdvals": lambda xp, x: (np.linalg.svdvals(_rect(np, x, 2, 3)) if xp is np
                                     else xp.linalg.svd(_rect(xp, x, 2, 3), compute_uv=False)),
    "linalg.qr": lambda xp, x: xp.concatenate([m.ravel() for m in xp.linalg.qr(_a(xp, x))]),
    "linalg.qr-tall": lambda xp, x: xp.concatenate(
        [m.ravel() for m in xp.linalg.qr(_rect(xp, x, 3, 2))]),
    "linalg.qr-wide": lambda xp, x: xp.concatenate(
        [m.ravel() for m in xp.linalg.qr(_rect(xp, x, 2, 3))]),
    "linalg.qr-r": lambda xp, x: xp.linalg.qr(_rect(xp, x, 3, 2), mode="r"),
    "linalg.cholesky": lambda xp, x: xp.linalg.cholesky(_hermitian(xp, x)),
    "linalg.cholesky-upper": lambda xp, x: _cholesky_upper(xp, _hermitian(xp, x)),
    "linalg.norm": lambda xp, x: xp.stack([
        xp.linalg.norm(_a(xp, x)), xp.linalg.norm(_a(xp, x), 2),
        xp.linalg.norm(_a(xp, x), "nuc"), xp.linalg.norm(_a(xp, x), 1),
        xp.linalg.norm(_a(xp, x), -np.inf), xp.linalg.norm(_a(xp, x)[0], 3),
        xp.linalg.norm(_a(xp, x)[0], 1)]),
    "scipy.expm": lambda xp, x: _sl(xp).expm(0.3 * _a(xp, x)),
    "scipy.solve": lambda xp, x: _sl(xp).solve(_a(xp, x), B),
    "scipy.solve-hermitian": lambda xp, x: _sl(xp).solve(
        _hermitian(xp, x) if xp is not np else np.triu(_hermitian(np, x)), B[0],
        assume_a="her"),
    "scipy.inv": lambda xp, x: _sl(xp).inv(_a(xp, x)),
    "scipy.det": lambda xp, x: _sl(xp).det(_a(xp, x)),
    "scipy.cholesky": lambda xp, x: _sl(xp).cholesky(_hermitian(xp, x)),
}


POINT = seeded("complex-linalg").uniform(-1.0, 1.0, N)
reference = named_references(FUNCTIONS, POINT)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_functions_against_jax(name, engine):
    exact = reference(name)
    f = lambda x: as_real_program(FUNCTIONS[name])(np, x)[0]  # noqa: E731
    value, jacobian = cyad.value_and_jacobian(f, POINT, engine=engine)
    tolerance = loosest(exact.tolerance, dict(rtol=1e-10, atol=1e-11))
    assert_matches(value, exact.value, **tolerance, what="value")
    assert_matches(jacobian, exact.first, **tolerance, what="jacobian")
    # a gradient (reverse mode on the tape) and a Hessian of a weighted sum of the outputs
    weights = seeded(name).standard_normal(value.size)
    loss = lambda x: np.dot(weights, f(x))  # noqa: E731
    assert_matches(cyad.gradient(loss, POINT, engine=engine), weights @ exact.first,
                   **tolerance, what="gradient")
    assert_matches(cyad.hessian(loss, POINT, engine=engine),
                   np.tensordot(weights, exact.second, 1), **tolerance, what="hessian")


def test_every_linalg_function_with_a_complex_definition_is_tested():
    from cyad._complex import linalg
    from cyad._complex.functions import SPECIAL
    defined = {"linalg." + function.__name__ for function, definition in SPECIAL.items()
               if definition.__module__ == linalg.__name__
               and getattr(np.linalg, getattr(function, "__name__", ""), None) is function}
    assert defined and defined - {name.split("-")[0] for name in FUNCTIONS} == set()


# -- the VJP rules are the JVP rules' adjoints ------------------------------------------------

def _complex_matrix(name, shape):
    parts = seeded(name).standard_normal((2,) + shape)
    return parts[0] + 1j * parts[1]


def _hermitian_matrix(name):
    a = _complex_matrix(name, (3, 3))
    return a @ np.conj(a.T) + np.eye(3)


# (core, operand, parameters)
_CORES = {
    "det": ("_DetCore", _complex_matrix("det", (2, 3, 3)), {}),
    "slogdet": ("_SlogdetCore", _complex_matrix("slogdet", (3, 3)), {}),
    "eigh": ("_EighCore", _hermitian_matrix("eigh"), {"uplo": "L"}),
    "eigh-upper": ("_EighCore", _hermitian_matrix("eigh-upper"), {"uplo": "U"}),
    "eigvalsh": ("_EigvalshCore", _hermitian_matrix("eigvalsh"), {"uplo": "L"}),
    "eig": ("_EigCore", _complex_matrix("eig", (3, 3)), {"real": False}),
    "eig-real": ("_EigCore", _REAL_ROTATION + 0.1, {"real": True}),
    "eigvals": ("_EigvalsCore", _complex_matrix("eigvals", (2, 3, 3)), {"real": False}),
    "svd-tall": ("_SvdCore", _complex_matrix("svd-tall", (4, 3)), {"compute_uv": True}),
    "svd-wide": ("_SvdCore", _complex_matrix("svd-wide", (3, 4)), {"compute_uv": True}),
    "svd-values": ("_SvdCore", _complex_matrix("svd-values", (3, 3)), {"compute_uv": False}),
    "qr-tall": ("_QrCore", _complex_matrix("qr-tall", (4, 3)), {"mode": "reduced"}),
    "qr-wide": ("_QrCore", _complex_matrix("qr-wide", (3, 4)), {"mode": "reduced"}),
    "qr-r": ("_QrCore", _complex_matrix("qr-r", (4, 3)), {"mode": "r"}),
    "cholesky": ("_CholeskyCore", _hermitian_matrix("cholesky"), {"upper": False}),
    "cholesky-upper": ("_CholeskyCore", _hermitian_matrix("cholesky-upper"), {"upper": True}),
    "expm": ("_ExpmCore", 0.5 * _complex_matrix("expm", (3, 3)), {}),
}


@pytest.mark.parametrize("name", list(_CORES))
def test_adjoint_identity(name):
    from cyad._complex import linalg
    core, a, params = _CORES[name]
    entry = getattr(linalg, core).function.__cyad_entry__
    rng = seeded("adjoint-" + name)
    operands = [np.ascontiguousarray(a.real), np.ascontiguousarray(a.imag)]
    tangents = [rng.standard_normal(a.shape) for _ in operands]
    out, forward = entry.jvp(operands, [t[None] for t in tangents], **params)
    out, forward = (out, forward) if isinstance(out, tuple) else ((out,), (forward,))
    weights = [rng.standard_normal(np.shape(o)) for o in out]
    backward = entry.vjp(operands, tuple(weights) if len(weights) > 1 else weights[0],
                         **params)
    lhs = sum(float(np.sum(w * f[0])) for w, f in zip(weights, forward, strict=True))
    rhs = sum(float(np.sum(t * b)) for t, b in zip(tangents, backward, strict=True))
    assert lhs == pytest.approx(rhs, rel=1e-11, abs=1e-11 * max(1.0, abs(lhs)))


# -- float32 ----------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_float32_gives_complex64(engine):
    seen = []

    def f(x):
        a = np.reshape(x[:9] + 1j * x[9:], (3, 3)) + np.eye(3, dtype=x.dtype) * 3
        w, v = np.linalg.eigh(a @ np.conj(a.T))
        z = np.linalg.solve(a, np.linalg.inv(a) @ a[:, 0]) * np.linalg.det(a)
        seen.append((z.dtype, w.dtype))
        return np.sum(np.abs(z) ** 2) + np.sum(w) + np.sum(np.abs(v) ** 2 * w)

    got = cyad.gradient(f, POINT.astype(np.float32), engine=engine)
    assert got.dtype == np.float32
    assert seen[-1] == (np.complex64, np.float32)
    assert_matches(got, cyad.gradient(f, POINT, engine=engine), rtol=2e-4, atol=2e-5)


# -- real matrices whose eigenvalues are complex ------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_a_prepared_eig_follows_the_eigenvalues_between_real_and_complex(engine):
    def f(x):
        w = np.linalg.eigvals(np.reshape(x, (2, 2)))
        return np.sum(np.real(w) ** 2 - np.imag(w) ** 2 + np.real(w) * np.imag(w))

    def exact(x):   # w = t +- sqrt(t^2 - d) (t half the trace, d the determinant)
        h = 1e-6
        return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(4)])

    real = np.array([1.0, 2.0, 0.5, 1.5])
    rotation = np.array([1.0, -2.0, 2.0, 1.0])   # eigenvalues 1 +- 2i
    prep = cyad.prepare_gradient(f, real, engine=engine)
    out = np.empty(4)
    for x in (real, rotation, real, rotation + 0.1):
        cyad.gradient(f, x, prep=prep, out=out)
        assert_matches(out, exact(x), rtol=1e-7, atol=1e-8)


# -- what is refused -------------------------------------------------------------------------

_REPEATED = np.array([2.0, 1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.5, 3.0])   # 2 twice
_IDENTITY = np.eye(3).ravel()


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("f, x, error, match", [
    (lambda x: np.abs(np.linalg.eigvals(x.reshape(3, 3) * (1 + 1j))), _REPEATED,
     np.linalg.LinAlgError, "repeated eigenvalues"),
    (lambda x: np.linalg.eigvalsh(np.diag(x[::4] * 1j) * 1j), _REPEATED,
     np.linalg.LinAlgError, "repeated eigenvalues"),
    (lambda x: np.linalg.svd(x.reshape(3, 3)[:2] * 1j, compute_uv=False), _IDENTITY,
     np.linalg.LinAlgError, "repeated or zero singular values"),
    (lambda x: np.abs(np.linalg.svd(x.reshape(3, 3)[:2] * 1j)[0]), _REPEATED,
     np.linalg.LinAlgError, "full_matrices=True"),
    (lambda x: np.abs(np.linalg.svd(x.reshape(3, 3) * 1j, hermitian=True)[1]), _REPEATED,
     TypeError, "hermitian=True"),
    (lambda x: np.abs(np.linalg.qr(x.reshape(3, 3)[:, :2] * 1j, mode="complete")[0]),
     _REPEATED, np.linalg.LinAlgError, "mode='complete'"),
    (lambda x: np.abs(np.linalg.det(x.reshape(3, 3) * (1 + 1j))), np.zeros(9),
     np.linalg.LinAlgError, "Singular matrix"),
])
def test_refused(f, x, error, match, engine):
    with pytest.raises(error, match=match):
        cyad.jacobian(f, x, engine=engine)

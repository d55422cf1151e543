"""numpy.fft on every engine: values and Jacobians against JAX for every function, length,
axis and norm; the cores' transposes by the adjoint identity; float32 as complex64."""
import numpy as np
import pytest
from derivative_references import assert_matches, jax, references, seeded
from scenarios import ENGINES

import cyad
from cyad._primitives import fourier

pytestmark = pytest.mark.xdist_group("test_fourier")

N = 24
NORMS = [None, "backward", "ortho", "forward"]


def _input(xp, x, kind, shape):
    size = int(np.prod(shape))
    if kind == "real":
        return xp.reshape(x[:size] * 1.0, shape)
    return xp.reshape(x[:size] + 1j * x[N - size:][::-1], shape)


# (function, input kind, input shape, keyword arguments)
CASES = (
    [("fft", kind, (6,), dict(n=n, norm=norm)) for kind in ("real", "complex")
     for n in (None, 4, 9) for norm in NORMS]
    + [("ifft", "complex", (6,), dict(n=n, norm=norm)) for n in (None, 5, 8) for norm in NORMS]
    + [("fft", "complex", (3, 4), dict(axis=0)), ("ifft", "real", (3, 4), dict(axis=0, n=5))]
    + [(name, "complex", (3, 4), kwargs) for name in ("fft2", "ifft2", "fftn", "ifftn")
       for kwargs in (dict(), dict(s=(2, 6), axes=(0, 1)), dict(norm="ortho"), dict(axes=(1, 0)))]
    + [(name, "complex", (3, 4), kwargs) for name in ("fftn", "ifftn")
       for kwargs in (dict(axes=(0,)), dict(s=(5,), axes=(0,), norm="forward"))]
    + [("fftn", "real", (2, 3, 4), dict(axes=(0, 2)))]
    + [("rfft", "real", (n,), dict(norm=norm)) for n in (6, 7) for norm in NORMS]
    + [("rfft", "real", (6,), dict(n=n)) for n in (4, 5, 9)]
    + [("rfft", "real", (3, 4), dict(axis=0))]
    + [("irfft", kind, (4,), dict(n=n, norm=norm)) for kind in ("complex", "real")
       for n in (None, 5, 6, 9) for norm in ("backward", "ortho", "forward")]
    + [("irfft", "complex", (3, 4), dict(axis=0))]
    + [(name, "real", (4, 6), kwargs) for name in ("rfft2", "rfftn")
       for kwargs in (dict(), dict(s=(3, 5), axes=(0, 1)), dict(norm="ortho"),
                      dict(axes=(1, 0)))]
    + [(name, "complex", (4, 4), kwargs) for name in ("irfft2", "irfftn")
       for kwargs in (dict(), dict(s=(3, 5), axes=(0, 1)),
                      dict(s=(4, 6), axes=(0, 1), norm="forward"), dict(axes=(1, 0)))]
    + [("hfft", "complex", (5,), dict(n=n, norm=norm)) for n in (None, 7)
       for norm in ("backward", "ortho", "forward")]
    + [("ihfft", "real", (n,), dict(norm=norm)) for n in (6, 7)
       for norm in ("backward", "ortho", "forward")]
    + [(name, kind, (3, 4), dict(axes=axes)) for name in ("fftshift", "ifftshift")
       for kind in ("real", "complex") for axes in (None, 1, (0, 1))]
)


def _case_id(case):
    name, kind, shape, kwargs = case
    arguments = ",".join(f"{k}={v}" for k, v in kwargs.items())
    return f"{name}-{kind}{'x'.join(map(str, shape))}-{arguments}"


def _program(case):
    name, kind, shape, kwargs = case

    def program(xp, x):
        y = getattr(xp.fft, name)(_input(xp, x, kind, shape), **kwargs)
        y = xp.reshape(y, (-1,))
        return [xp.concatenate([xp.real(y), xp.imag(y)])]
    return program


POINT = seeded("fourier").standard_normal(N)
_REFERENCES = {}


def reference(case):
    if not _REFERENCES:
        found = references([(_program(c), POINT) for c in CASES])
        _REFERENCES.update((_case_id(c), d) for c, (d,) in zip(CASES, found, strict=True))
    return _REFERENCES[_case_id(case)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_value_and_jacobian_against_jax(case, engine):
    exact = reference(case)
    f = lambda x: _program(case)(np, x)[0]  # noqa: E731
    value, jacobian = cyad.value_and_jacobian(f, POINT, engine=engine)
    assert_matches(value, exact.value, **exact.tolerance, what="value")
    assert_matches(value, f(POINT), rtol=1e-13, atol=1e-13, what="NumPy's value")
    assert_matches(jacobian, exact.first, **exact.tolerance, what="jacobian")


@pytest.mark.parametrize("case", CASES[::7], ids=_case_id)
def test_pullback_is_the_jacobians_transpose(case):
    f = lambda x: _program(case)(np, x)[0]  # noqa: E731
    jacobian = cyad.jacobian(f, POINT)
    cotangent = seeded(_case_id(case)).standard_normal(jacobian.shape[0])
    assert_matches(cyad.pullback(f, POINT, cotangent, engine="tape"), cotangent @ jacobian,
                   rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["fft", "ifft", "fftn", "ifftn", "fft2", "ifft2", "rfft",
                                  "rfftn", "rfft2", "irfft", "irfftn", "irfft2", "hfft", "ihfft"])
def test_out_is_refused(name, engine):
    # (a complex result cannot go into a real array of the engine, nor into a plain ndarray)
    x = POINT[:12].reshape(3, 4)
    with pytest.raises(TypeError, match=f"numpy.fft.{name} with out= is not supported"):
        cyad.jacobian(lambda x: np.real(getattr(np.fft, name)(x, out=np.empty((3, 4), complex))),
                      x, engine=engine)


# -- the cores' transposes -----------------------------------------------------------------

def _adjoint_gap(core, operands, params):
    """<A u, v> - <u, A^T v> for random u (the operands' shapes) and v, relative."""
    rng = seeded(f"{core.__name__}{params}")
    u = [rng.standard_normal(np.shape(x)) for x in operands]
    out = core(*u, **params)
    out = out if isinstance(out, tuple) else (out,)
    v = [rng.standard_normal(o.shape) for o in out]
    back = core.__cyad_entry__.vjp(operands, tuple(v) if len(v) > 1 else v[0], **params)
    left = sum(np.vdot(o, w) for o, w in zip(out, v))
    right = sum(np.vdot(a, b) for a, b in zip(u, back))
    return abs(left - right) / max(abs(left), 1.0)


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("axes", [(-1,), (-2,), (-2, -1)])
def test_c2c_transpose(inverse, axes):
    shape = (3, 5)
    params = dict(axes=axes, inverse=inverse, scale=0.7)
    assert _adjoint_gap(fourier.c2c, (np.zeros(shape), np.zeros(shape)), params) < 1e-13


@pytest.mark.parametrize("n", [6, 7])
@pytest.mark.parametrize("axis", [-1, -2])
@pytest.mark.parametrize("interior", [1.0, 0.5, 2.0])
def test_r2c_and_c2r_transposes(n, axis, interior):
    shape = (n, 3) if axis == -2 else (3, n)
    half = (n // 2 + 1, 3) if axis == -2 else (3, n // 2 + 1)
    r2c = dict(axis=axis, scale=0.3, interior=interior)
    c2r = dict(n=n, axis=axis, scale=0.3, interior=interior)
    assert _adjoint_gap(fourier.r2c, (np.zeros(shape),), r2c) < 1e-13
    assert _adjoint_gap(fourier.c2r, (np.zeros(half), np.zeros(half)), c2r) < 1e-13


# -- precision -----------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_float32_transforms_in_complex64(engine):
    seen = []

    def f(x):
        z = np.fft.rfft(x)
        seen.append(z.dtype)
        return np.sum(np.fft.irfft(z * z, n=x.size))

    x = POINT[:8]
    exact = cyad.gradient(f, x, engine=engine)
    got = cyad.gradient(f, x.astype(np.float32), engine=engine)
    assert got.dtype == np.float32
    assert seen[-1] == np.complex64
    assert_matches(got, exact, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(jax is None, reason="JAX is the reference")
def test_spectral_step_chain_gradient_and_hvp_against_jax():
    # irfft(k * rfft(u)), ten times, then a nonlinear loss: the spectral solver's shape
    import jax.numpy as jnp

    n = 64
    k = -(np.fft.rfftfreq(n, 1.0 / n) ** 2) * 1e-3

    def step(xp):
        def loss(u):
            for _ in range(10):
                u = xp.fft.irfft(xp.exp(k) * xp.fft.rfft(u), n=n) + 0.1 * u ** 2
            return xp.sum(u ** 2)
        return loss

    u = 0.3 * np.sin(np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)) + 0.1
    v = seeded("spectral").standard_normal(n)
    gradient = np.asarray(jax.grad(step(jnp))(u))
    hvp = np.asarray(jax.jvp(jax.grad(step(jnp)), (u,), (v,))[1])
    for engine in ENGINES:
        assert_matches(cyad.gradient(step(np), u, engine=engine), gradient, rtol=1e-11,
                       atol=1e-12)
        assert_matches(cyad.hvp(step(np), u, v, engine=engine), hvp, rtol=1e-10, atol=1e-11)
    prep = cyad.prepare_gradient(step(np), u, engine="tape")
    out = np.empty(n)
    for point in (u, u[::-1].copy()):
        cyad.gradient(step(np), point, prep=prep, out=out)
        assert_matches(out, np.asarray(jax.grad(step(jnp))(point)), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_cores_compute_alike_with_numpys_transforms(dtype, monkeypatch):
    # the replay runs the cores into its buffers with SciPy's pocketfft where SciPy is
    # installed; NumPy's transforms (without SciPy) give the same derivatives, batched too
    rng = seeded("numpy's transforms")
    x = rng.standard_normal(10).astype(dtype)
    w = rng.standard_normal(9).astype(dtype)

    def f(x):
        z = np.fft.fft(np.fft.rfft(x) * (1 + 0.5j), 7)
        return np.fft.irfft(np.fft.ifft(z * z), 9) * np.sum(np.fft.rfft(x, norm="ortho").imag)

    def loss(x):
        return np.sum(f(x) * w)

    results = []
    for pocketfft in (fourier._pocketfft, lambda: None):
        monkeypatch.setattr(fourier, "_pocketfft", pocketfft)
        gradient = cyad.prepare_gradient(loss, x, engine="tape")
        jacobian = cyad.prepare_jacobian(f, x, engine="tape")     # forward lanes: batched
        results.append([cyad.gradient(loss, x, prep=gradient) for _ in range(2)]
                       + [cyad.jacobian(f, x, prep=jacobian) for _ in range(2)])
    tolerance = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-12,
                                                                                atol=1e-13)
    for with_scipy, with_numpy in zip(*results):
        assert with_numpy.dtype == dtype
        assert_matches(with_numpy, with_scipy, **tolerance)

"""scipy.fft and scipy.signal's FFT convolutions on every engine (cyad/_primitives/
scipy_fourier.py).

The transforms are linear, so SciPy itself gives an independent reference: the Jacobian's
columns are SciPy's function of the basis vectors (on plain arrays), and a nonlinear loss
around it, sum(sin(T x)**2), has the gradient J^T sin(2 T x) and the Hessian J^T diag(2
cos(2 T x)) J. The convolutions are bilinear: d conv(a, b) = conv(da, b) + conv(a, db), and
the second derivative along (u, v) is conv(du, dv) + conv(dv, du), each from SciPy. JAX
(jax.scipy.fft's DCT-II, jax.numpy.fft, jax.scipy.signal) is a second reference where it
has the function. The real transforms' core is held to the adjoint identity.
"""
import itertools

import numpy as np
import pytest
import scipy.fft as sf
import scipy.signal as ss
from derivative_references import (
    assert_matches,
    basis_jacobian,
    central_differences,
    jax,
    jnp,
    references,
    seeded,
    sine_loss_references,
)
from scenarios import ENGINES

import cyad
from cyad._primitives import scipy_fourier

pytestmark = pytest.mark.xdist_group("test_scipy_fft")

EXACT = dict(rtol=1e-12, atol=1e-12)
FLOAT32 = dict(rtol=2e-5, atol=2e-5)
NORMS = [None, "backward", "ortho", "forward"]
REAL = ["dct", "idct", "dst", "idst"]


def _parts(y):
    """A result as one real vector: its real and imaginary parts where complex."""
    y = np.ravel(y)
    return np.concatenate([np.real(y), np.imag(y)]) if np.iscomplexobj(y) else y


def _loss(program):
    return lambda x: np.sum(np.sin(program(x)) ** 2)


def _loss_references(program, x):
    """The gradient and Hessian of sum(sin(program(x))**2) for a linear program."""
    return sine_loss_references(basis_jacobian(program, x.size), program(x))


def _check_linear(program, x, engine, tolerance=EXACT):
    """cyad's value and Jacobian of a linear program against SciPy's value and its basis
    Jacobian."""
    value, jacobian = cyad.value_and_jacobian(program, x, engine=engine)
    expected = basis_jacobian(lambda e: program(e.astype(x.dtype)), x.size)
    assert_matches(value, program(x), **tolerance, what="value")
    assert_matches(jacobian, expected, **tolerance, what="jacobian")


def _check_second_order(program, x, engine, tolerance=EXACT):
    gradient, hessian = _loss_references(program, x)
    v = seeded("direction").standard_normal(x.size)
    loss = _loss(program)
    assert_matches(cyad.gradient(loss, x, engine=engine), gradient, **tolerance, what="gradient")
    assert_matches(cyad.hessian(loss, x, engine=engine), hessian, **tolerance, what="hessian")
    assert_matches(cyad.hvp(loss, x, v, engine=engine), hessian @ v, **tolerance, what="hvp")


X = seeded("scipy.fft").standard_normal(24)


# -- the real transforms --------------------------------------------------------------------------

ONE_AXIS = [(name, dict(type=t, norm=norm, orthogonalize=orth))
            for name in REAL for t in (1, 2, 3, 4) for norm in NORMS
            for orth in (None, False, True)]


def _real_program(name, shape, kwargs):
    size = int(np.prod(shape))
    return lambda x: np.ravel(getattr(sf, name)(x[:size].reshape(shape), **kwargs))


def _id(case):
    name, kwargs = case[0], case[-1]
    return f"{name}-" + ",".join(f"{k}={v}" for k, v in kwargs.items())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", ONE_AXIS, ids=_id)
def test_real_transform_jacobian(case, engine):
    name, kwargs = case
    _check_linear(_real_program(name, (7,), kwargs), X[:7], engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", ONE_AXIS[::5], ids=_id)
def test_real_transform_second_order(case, engine):
    name, kwargs = case
    _check_second_order(_real_program(name, (6,), kwargs), X[:6], engine)


# n (cropped, padded), axis, a stack of rows, and the n-dimensional transforms' s and axes
SHAPED = (
    [(name, (3, 4), dict(type=t, n=n, axis=axis, norm=norm))
     for name in REAL for t in (1, 2, 3, 4)
     for n, axis, norm in ((None, 0, None), (6, -1, "ortho"), (3, 1, "forward"),
                           (2, 0, "backward"))]
    + [(name + "n", (3, 4), kwargs) for name in REAL for kwargs in (
        dict(type=2), dict(type=1, norm="ortho"), dict(type=3, s=(4, 2), axes=(0, 1)),
        dict(type=4, axes=(1, 0), norm="forward"), dict(type=2, axes=0, s=5),
        dict(type=3, s=(-1, 6), norm="ortho", orthogonalize=False),
        dict(type=1, axes=(-1,), norm="ortho", orthogonalize=True))]
    + [(name + "n", (2, 3, 4), dict(type=t, axes=(0, 2), norm="ortho"))
       for name in REAL for t in (2, 3)]
)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", SHAPED, ids=lambda c: f"{c[0]}{c[1]}-" + _id(c))
def test_real_transform_lengths_and_axes(case, engine):
    name, shape, kwargs = case
    _check_linear(_real_program(name, shape, kwargs), X[:int(np.prod(shape))], engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", SHAPED[::9], ids=lambda c: f"{c[0]}{c[1]}-" + _id(c))
def test_real_transform_lengths_and_axes_second_order(case, engine):
    name, shape, kwargs = case
    size = int(np.prod(shape))
    _check_second_order(_real_program(name, shape, kwargs), X[:size], engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", REAL + [n + "n" for n in REAL])
@pytest.mark.parametrize("t", [1, 2, 3, 4])
def test_real_transform_float32(name, t, engine):
    program = _real_program(name, (2, 5), dict(type=t, axes=(0, 1)) if name.endswith("n")
                            else dict(type=t, norm="ortho"))
    x = X[:10].astype(np.float32)
    value, jacobian = cyad.value_and_jacobian(program, x, engine=engine)
    assert value.dtype == jacobian.dtype == np.float32
    assert_matches(value, program(x), **FLOAT32)
    assert_matches(jacobian, basis_jacobian(program, 10), **FLOAT32)
    gradient, _ = _loss_references(program, X[:10])
    got = cyad.gradient(_loss(program), x, engine=engine)
    assert got.dtype == np.float32
    assert_matches(got, gradient, **FLOAT32)


@pytest.mark.parametrize("engine", ENGINES)
def test_real_transforms_of_complex_arrays_transform_both_parts(engine):
    def program(x):
        z = x[:6] * (1.0 - 0.5j) + 1j * x[6:] ** 2
        return _parts(sf.dct(z, type=3, norm="ortho") + sf.idstn(z.reshape(2, 3), type=1)
                      .ravel())

    x = X[:12]
    expected = central_differences(program, x)
    value, jacobian = cyad.value_and_jacobian(program, x, engine=engine)
    assert_matches(value, program(x), **EXACT)
    assert_matches(jacobian, expected, rtol=1e-8, atol=1e-9)


# -- the core's transpose -------------------------------------------------------------------------

def _adjoint_gap(params, shape):
    rng = seeded(f"r2r{params}{shape}")
    u, v = rng.standard_normal(shape), rng.standard_normal(shape)
    r2r = scipy_fourier.r2r
    forward = r2r(u, **params)
    (back,) = r2r.__cyad_entry__.vjp((u,), v, **params)
    left, right = np.vdot(forward, v), np.vdot(u, back)
    return abs(left - right) / max(abs(left), 1.0)


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("axes", [(-1,), (-2,), (-2, -1)])
@pytest.mark.parametrize("kind,t,norm,orthogonalize", [
    (kind, t, norm, orth) for kind in ("dct", "dst") for t in (1, 2, 3, 4)
    for norm in ("backward", "ortho", "forward") for orth in (False, True)])
def test_real_core_adjoint_identity(kind, t, norm, orthogonalize, axes, transposed):
    params = dict(kind=kind, type=t, axes=axes, norm=norm, orthogonalize=orthogonalize,
                  transposed=transposed)
    assert _adjoint_gap(params, (4, 5)) < 1e-13


@pytest.mark.parametrize("n", [2, 3, 6])
@pytest.mark.parametrize("kind,t,norm,orthogonalize", [
    (kind, t, norm, orth) for kind in ("dct", "dst") for t in (1, 2, 3, 4)
    for norm in ("backward", "ortho", "forward") for orth in (False, True)])
def test_real_core_transposed_is_scipys_matrix_transposed(kind, t, norm, orthogonalize, n):
    # (the transposed core's own impl against the transpose of SciPy's matrix)
    params = dict(kind=kind, type=t, axes=(-1,), norm=norm, orthogonalize=orthogonalize)
    matrix = basis_jacobian(lambda e: getattr(sf, kind)(e, type=t, norm=norm,
                                                         orthogonalize=orthogonalize), n)
    transposed = basis_jacobian(lambda e: scipy_fourier.r2r(e, **params, transposed=True), n)
    assert_matches(transposed, matrix.T, **EXACT)


def _counting_dctn(monkeypatch):
    """The shapes of the arrays scipy.fft.dctn transforms from now on."""
    calls = []
    dctn = sf.dctn

    def counting(x, *args, **kwargs):
        if isinstance(x, np.ndarray):   # (the engine's own call, not f's)
            calls.append(x.shape)
        return dctn(x, *args, **kwargs)

    monkeypatch.setattr(sf, "dctn", counting)
    return calls


def test_lanes_run_as_one_batched_call(monkeypatch):
    # a tangent's lanes are a leading axis of one scipy.fft call, the axes counted from the end
    calls = _counting_dctn(monkeypatch)
    program = lambda x: sf.dct(x.reshape(3, 4), axis=0).ravel()  # noqa: E731
    jacobian = cyad.jacobian(program, X[:12], chunk=12, engine="dual")
    assert_matches(jacobian, basis_jacobian(program, 12), **EXACT)
    assert len(calls) == 2 and calls[0] == (3, 4) and calls[1][1:] == (3, 4)


def test_tape_replays_one_transform_each_way(monkeypatch):
    # a prepared gradient replays the transform once forward and once transposed
    loss = _loss(lambda x: sf.dctn(x.reshape(2, 3), type=3, norm="ortho").ravel())
    prep = cyad.prepare_gradient(loss, X[:6], engine="tape")
    cyad.gradient(loss, X[6:12], prep=prep)
    calls = _counting_dctn(monkeypatch)
    cyad.gradient(loss, X[12:18], prep=prep)
    assert calls == [(2, 3), (2, 3)]


# -- the complex transforms: numpy.fft's, through scipy.fft ---------------------------------------

def _input(x, kind, shape):
    size = int(np.prod(shape))
    if kind == "real":
        return np.reshape(x[:size] * 1.0, shape)
    return np.reshape(x[:size] + 1j * x[x.size - size:][::-1], shape)


COMPLEX = (
    [("fft", kind, (6,), dict(n=n, norm=norm)) for kind in ("real", "complex")
     for n, norm in ((None, None), (4, "ortho"), (9, "forward"))]
    + [("ifft", "complex", (6,), dict(n=n, norm=norm)) for n, norm in ((None, "backward"),
                                                                         (5, "ortho"))]
    + [("rfft", "real", (7,), dict(n=n, norm=norm)) for n, norm in ((None, None), (4, "ortho"))]
    + [("irfft", "complex", (4,), dict(n=n, norm=norm)) for n, norm in ((None, None),
                                                                         (7, "forward"))]
    + [("hfft", "complex", (5,), dict(n=7, norm="ortho")), ("ihfft", "real", (6,), {})]
    + [(name, "complex", (3, 4), kwargs) for name in ("fft2", "ifft2", "fftn", "ifftn")
       for kwargs in (dict(), dict(s=(2, 6), axes=(0, 1)), dict(axes=(1, 0), norm="ortho"))]
    + [(name, "real", (4, 6), kwargs) for name in ("rfft2", "rfftn")
       for kwargs in (dict(), dict(s=(3, 5), axes=(0, 1)), dict(s=(-1, 5), norm="forward"))]
    + [(name, "complex", (4, 4), kwargs) for name in ("irfft2", "irfftn")
       for kwargs in (dict(), dict(s=(3, 5), axes=(0, 1)), dict(axes=(1, 0)))]
    + [("fft", "complex", (3, 4), dict(axis=0, overwrite_x=True, workers=2)),
       ("fft2", "complex", (3, 4), dict(axes=0)), ("irfftn", "complex", (3, 4), dict(s=(-1, 5)))]
    + [(name, kind, (3, 4), dict(axes=axes)) for name in ("fftshift", "ifftshift")
       for kind in ("real", "complex") for axes in (None, 1, (0, 1))]
)


def _complex_program(case):
    name, kind, shape, kwargs = case
    return lambda x: _parts(getattr(sf, name)(_input(x, kind, shape), **kwargs))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", COMPLEX, ids=lambda c: f"{c[0]}-{c[1]}" + _id(c))
def test_complex_transform_jacobian(case, engine):
    _check_linear(_complex_program(case), X, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", COMPLEX[::4], ids=lambda c: f"{c[0]}-{c[1]}" + _id(c))
def test_complex_transform_second_order(case, engine):
    _check_second_order(_complex_program(case), X, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_frequencies_are_differentiable_in_the_spacing(engine):
    for name, n in (("fftfreq", 7), ("rfftfreq", 8)):
        def f(x, name=name, n=n):
            return getattr(sf, name)(n, x[0] ** 2)

        x = np.array([0.7])
        value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
        assert_matches(value, getattr(sf, name)(n, 0.49), **EXACT)
        assert_matches(jacobian[:, 0], -2 * getattr(sf, name)(n, 0.49) / 0.7, **EXACT)


@pytest.mark.skipif(jax is None, reason="JAX is the reference")
@pytest.mark.parametrize("engine", ENGINES)
def test_against_jax(engine):
    def program(xp, x):
        # scipy.fft's functions themselves, against jax.numpy.fft's and jax.scipy.fft's
        fft, dct = (sf, sf) if xp is np else (jnp.fft, jax.scipy.fft)
        m = xp.reshape(x[:12], (3, 4))
        y = [dct.dct(x[:7], norm="ortho"), dct.dct(x[:6], n=8), dct.idct(x[:5] ** 2),
             dct.idct(m, axis=0, norm="ortho"), dct.dctn(m, s=(4, 2)),
             dct.idctn(xp.sin(m), norm="ortho"), xp.real(fft.fft(x[:9])),
             xp.imag(fft.rfft(x[:8], norm="ortho")), fft.irfft(fft.rfft(x ** 2), n=24),
             xp.imag(fft.fftn(m * m, axes=(1, 0)))]
        return [xp.concatenate([xp.ravel(a) for a in y])]

    x = X
    ref = references([(program, x)])[0][0]
    value, jacobian = cyad.value_and_jacobian(lambda x: program(np, x)[0], x, engine=engine)
    assert_matches(value, ref.value, **ref.tolerance)
    assert_matches(jacobian, ref.first, **ref.tolerance)
    w = seeded("jax weights").standard_normal(ref.value.shape)
    hessian = np.tensordot(w, ref.second, 1)
    assert_matches(cyad.hessian(lambda x: np.sum(program(np, x)[0] * w), x, engine=engine),
                   hessian, **ref.tolerance)


# -- operators: pushforward, pullback, a prepared gradient ----------------------------------------

def _mixed(x):
    m = x[:12].reshape(3, 4)
    return np.concatenate([sf.dctn(m, type=1, norm="ortho").ravel(),
                           sf.idst(x[12:], type=4), sf.dst(m, type=3, axis=0).ravel()])


@pytest.mark.parametrize("engine", ENGINES)
def test_pushforward_and_pullback(engine):
    jacobian = basis_jacobian(_mixed, 24)
    v = seeded("v").standard_normal(24)
    w = seeded("w").standard_normal(jacobian.shape[0])
    assert_matches(cyad.pushforward(_mixed, X, v, engine=engine), jacobian @ v, **EXACT)
    assert_matches(cyad.pullback(_mixed, X, w, engine=engine), w @ jacobian, **EXACT)


@pytest.mark.parametrize("engine", ENGINES)
def test_prepared_gradient_with_out(engine):
    loss = _loss(_mixed)
    prep = cyad.prepare_gradient(loss, X, engine=engine)
    out = np.empty(24)
    for point in (X, X[::-1].copy(), 2.0 * X):
        result = cyad.gradient(loss, point, prep=prep, out=out)
        assert result is out or result is None or np.shares_memory(result, out)
        assert_matches(out, _loss_references(_mixed, point)[0], **EXACT)


# -- the convolutions -----------------------------------------------------------------------------

def _bilinear_references(conv, a_of, b_of, x):
    """value, Jacobian and Hessian-vector products of conv(a(x), b(x)), a and b linear in x,
    from SciPy alone: d conv = conv(da, b) + conv(a, db)."""
    a, b = a_of(x), b_of(x)
    columns = [np.ravel(conv(a_of(e), b) + conv(a, b_of(e))) for e in np.eye(x.size)]
    return np.ravel(conv(a, b)), np.stack(columns, axis=1)


def _second(conv, a_of, b_of, size, u, v):
    """The second derivative of conv(a(x), b(x)) along u and v: conv(au, bv) + conv(av, bu)."""
    return np.ravel(conv(a_of(u), b_of(v)) + conv(a_of(v), b_of(u)))


SIGNAL_SHAPES = [((7,), (3,)), ((3,), (7,)), ((4,), (4,)), ((5, 4), (2, 3)), ((2, 3), (4, 5)),
                 ((4, 1), (3, 5)), ((1,), (5,))]


def _convolution_cases():
    cases = []
    for (s1, s2), mode in itertools.product(SIGNAL_SHAPES, ("full", "same", "valid")):
        valid_ok = all(p >= q for p, q in zip(s1, s2)) or all(q >= p for p, q in zip(s1, s2))
        if mode == "valid" and not valid_ok:
            continue
        cases += [("fftconvolve", s1, s2, dict(mode=mode)), ("oaconvolve", s1, s2, dict(mode=mode))]
        cases += [(name, s1, s2, dict(mode=mode, method=method))
                  for name in ("convolve", "correlate") for method in ("fft", "direct", "auto")]
    cases += [(name, (3, 6), (3, 2), dict(mode=mode, axes=1)) for name in ("fftconvolve",
                                                                         "oaconvolve")
              for mode in ("full", "same", "valid")]
    cases += [("fftconvolve", (2, 5, 4), (1, 3, 4), dict(mode="same", axes=(1, -1)))]
    return cases


CONVOLUTIONS = _convolution_cases()
SIGNALS = seeded("scipy.signal").standard_normal(48)


def _operands(s1, s2):
    n1, n2 = int(np.prod(s1)), int(np.prod(s2))
    # a depends on x[:n1], b on x[n1 // 2 : n1 // 2 + n2] and x[-1]: overlapping, both varying
    a_of = lambda x: np.reshape(x[:n1] * 1.0, s1)  # noqa: E731
    b_of = lambda x: np.reshape(x[n1 // 2:n1 // 2 + n2] - 0.5 * x[-1], s2)  # noqa: E731
    return a_of, b_of, max(n1, n1 // 2 + n2) + 1


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CONVOLUTIONS, ids=lambda c: f"{c[0]}{c[1]}{c[2]}-" + _id(c))
def test_convolution_value_and_jacobian(case, engine):
    name, s1, s2, kwargs = case
    a_of, b_of, size = _operands(s1, s2)
    conv = lambda a, b: getattr(ss, name)(a, b, **kwargs)  # noqa: E731
    x = SIGNALS[:size]
    value, jacobian = _bilinear_references(conv, a_of, b_of, x)
    got_value, got = cyad.value_and_jacobian(lambda x: np.ravel(conv(a_of(x), b_of(x))), x,
                                             engine=engine)
    assert_matches(got_value, value, **EXACT, what="value")
    assert_matches(got, jacobian, **EXACT, what="jacobian")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CONVOLUTIONS[::5], ids=lambda c: f"{c[0]}{c[1]}{c[2]}-" + _id(c))
def test_convolution_second_order(case, engine):
    name, s1, s2, kwargs = case
    a_of, b_of, size = _operands(s1, s2)
    conv = lambda a, b: getattr(ss, name)(a, b, **kwargs)  # noqa: E731
    x = SIGNALS[:size]
    value, _ = _bilinear_references(conv, a_of, b_of, x)
    w = seeded("weights").standard_normal(value.size)
    f = lambda x: np.sum(np.ravel(conv(a_of(x), b_of(x))) * w)  # noqa: E731
    hessian = np.array([[w @ _second(conv, a_of, b_of, size, e, d) for d in np.eye(size)]
                        for e in np.eye(size)])
    v = seeded("v").standard_normal(size)
    assert_matches(cyad.hessian(f, x, engine=engine), hessian, **EXACT)
    assert_matches(cyad.hvp(f, x, v, engine=engine), hessian @ v, **EXACT)


@pytest.mark.parametrize("engine", ENGINES)
def test_convolution_float32(engine):
    def f(x):
        return np.ravel(ss.fftconvolve(x[:6], x[6:9] ** 2, mode="same")
                        + ss.correlate(x[:6], x[3:], mode="same", method="fft"))

    x = X[:12].astype(np.float32)
    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    assert value.dtype == jacobian.dtype == np.float32
    exact = cyad.jacobian(f, X[:12], engine=engine)
    assert_matches(jacobian, exact, **FLOAT32)


@pytest.mark.parametrize("engine", ENGINES)
def test_convolution_of_complex_operands(engine):
    def f(x):
        a = x[:5] + 1j * x[5:10]
        return _parts(ss.fftconvolve(a, x[10:13] - 2j * x[:3], mode="same")
                      + ss.correlate(a, a[:3], mode="same"))

    x = X[:13]
    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    assert_matches(value, f(x), **EXACT)
    assert_matches(jacobian, central_differences(f, x), rtol=1e-8, atol=1e-9)


@pytest.mark.skipif(jax is None, reason="JAX is the reference")
@pytest.mark.parametrize("engine", ENGINES)
def test_convolutions_against_jax(engine):
    def program(xp, x):
        signal = ss if xp is np else jax.scipy.signal
        a, b, m = x[:7], x[7:10] ** 2, xp.reshape(x[:12], (3, 4))
        y = [signal.fftconvolve(a, b), signal.fftconvolve(a, b, mode="same"),
             signal.fftconvolve(m, m[:2, :3], mode="valid"), signal.convolve(a, b, mode="same"),
             signal.correlate(a, b, mode="full"), signal.correlate(m, xp.sin(m[1:, 1:]),
                                                                   mode="same"),
             signal.fftconvolve(m, m[:, :2], axes=1)]
        return [xp.concatenate([xp.ravel(c) for c in y])]

    x = X[:12]
    ref = references([(program, x)])[0][0]
    value, jacobian = cyad.value_and_jacobian(lambda x: program(np, x)[0], x, engine=engine)
    assert_matches(value, ref.value, **ref.tolerance)
    assert_matches(jacobian, ref.first, **ref.tolerance)
    w = seeded("jax weights").standard_normal(ref.value.shape)
    assert_matches(cyad.hessian(lambda x: np.sum(program(np, x)[0] * w), x, engine=engine),
                   np.tensordot(w, ref.second, 1), **ref.tolerance)


# -- what is refused ------------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_errors(engine):
    def jac(f):
        return cyad.jacobian(f, X[:8], engine=engine)

    with pytest.raises(NotImplementedError, match="plan"):
        jac(lambda x: np.real(sf.fft(x, plan=object())))
    with pytest.raises(ValueError, match="type must be"):
        jac(lambda x: sf.dct(x, type=5))
    with pytest.raises(ValueError, match="norm"):
        jac(lambda x: sf.dst(x, norm="unitary"))
    with pytest.raises(ValueError, match="at least 2"):
        jac(lambda x: sf.dct(x[:1], type=1))
    with pytest.raises(ValueError, match="same length"):
        jac(lambda x: sf.dctn(x.reshape(2, 4), s=(2, 2), axes=(0,)))
    with pytest.raises(ValueError, match="mode"):
        jac(lambda x: ss.fftconvolve(x, x, mode="circular"))
    with pytest.raises(ValueError, match="method"):
        jac(lambda x: ss.convolve(x, x, method="winograd"))
    with pytest.raises(ValueError, match="dimensionality"):
        jac(lambda x: ss.fftconvolve(x, x.reshape(2, 4)))
    with pytest.raises(ValueError, match="at least as large"):
        jac(lambda x: ss.fftconvolve(x.reshape(2, 4), x.reshape(4, 2), mode="valid"))
    with pytest.raises(ValueError, match="at least as large"):   # (as SciPy's convolve)
        jac(lambda x: ss.convolve(x[:5].reshape(1, 5), np.ones((3, 2)), mode="valid"))


@pytest.mark.parametrize("engine", ENGINES)
def test_convolution_of_scalars_and_of_a_list(engine):
    x = X[:3]
    f = lambda x: np.stack([ss.correlate(x[0], x[1]), ss.fftconvolve(x[1], x[2])])  # noqa: E731
    assert_matches(cyad.jacobian(f, x, engine=engine),
                   [[x[1], x[0], 0.0], [0.0, x[2], x[1]]], **EXACT)
    g = lambda x: ss.convolve(x, [1.0, -2.0, 0.5], mode="same")  # noqa: E731
    assert_matches(cyad.jacobian(g, x, engine=engine), basis_jacobian(g, 3), **EXACT)


def test_plain_calls_are_scipys():
    from cyad._primitives.scipy_functions import SCIPY_FUNCTIONS
    for module in (sf, ss):
        for name in SCIPY_FUNCTIONS[module.__name__]:
            wrapper = getattr(module, name)
            assert wrapper.__cyad_dispatching__ and wrapper.__name__ == name
    assert np.array_equal(sf.dct(X, type=3), sf.dct.__wrapped__(X, type=3))
    assert np.array_equal(ss.fftconvolve(X, X[:5]), ss.fftconvolve.__wrapped__(X, X[:5]))

"""scipy.signal's direct convolutions, linear filters and smoothing on every engine
(cyad/_primitives/scipy_signal.py).

References, independent of cyad:
- JAX: jax.scipy.signal's convolve, correlate, convolve2d, correlate2d and detrend agree
  with SciPy where one operand is at least as large as the other along every axis.
- SciPy itself, elsewhere. A convolution of operands affine in x is quadratic in x, so
  central differences of step 1 are exact (up to rounding) at both orders:
  ``(F(x + e_i) - F(x - e_i)) / 2`` and ``(F(x + e_i + e_j) - F(x + e_i - e_j) - F(x - e_i
  + e_j) + F(x - e_i - e_j)) / 4``. A function linear in x (a filter with constant
  coefficients, savgol_filter, detrend) has SciPy's function of the unit vectors as its
  Jacobian's columns, and the loss sum(sin(J x)**2) the gradient J^T sin(2 J x) and the
  Hessian J^T diag(2 cos(2 J x)) J. Derivatives in a filter's coefficients come from
  fourth-order central differences of SciPy's function (the second order: of cyad's
  exact first, held to SciPy's), and the two engines agree to rounding.
The primitives are held to the adjoint identity, batches included.
"""
import functools
import itertools

import numpy as np
import pytest
import scipy.optimize
import scipy.signal as ss
from derivative_references import (
    assert_matches,
    basis_jacobian,
    by_differences,
    central_differences,
    jax,
    references,
    seeded,
    sine_loss_references,
)
from scenarios import ENGINES

import cyad
from cyad._primitives import scipy_signal

pytestmark = pytest.mark.xdist_group("test_scipy_signal")

EXACT = dict(rtol=1e-11, atol=1e-12)
DIFFERENCES = dict(rtol=1e-6, atol=1e-7)
FLOAT32 = dict(rtol=2e-5, atol=2e-5)
X = seeded("scipy.signal").standard_normal(48)


def _quadratic_references(f, x):
    """The Jacobian (value.shape + x.shape) and the second derivative (+ x.shape) of an f
    quadratic in x, by central differences of step 1 (exact for a quadratic)."""
    e = np.eye(x.size)
    jacobian = np.stack([(f(x + e[i]) - f(x - e[i])) / 2 for i in range(x.size)], axis=-1)
    second = np.empty(jacobian.shape + (x.size,))
    for i, j in itertools.product(range(x.size), repeat=2):
        second[..., i, j] = (f(x + e[i] + e[j]) - f(x + e[i] - e[j]) - f(x - e[i] + e[j])
                             + f(x - e[i] - e[j])) / 4
    return jacobian, second


def _check_linear(program, x, engine, tolerance=EXACT):
    """Value, Jacobian, and the gradient, Hessian and HVP of sum(sin(program(x))**2), of a
    program linear in x, against SciPy's."""
    flat = lambda x: np.ravel(program(x))  # noqa: E731
    jacobian = basis_jacobian(program, x.size)
    value, got = cyad.value_and_jacobian(flat, x, engine=engine)
    assert_matches(value, flat(x), **tolerance, what="value")
    assert_matches(got, jacobian, **tolerance, what="jacobian")
    y = flat(x)
    loss = lambda x: np.sum(np.sin(flat(x)) ** 2)  # noqa: E731
    gradient, hessian = sine_loss_references(jacobian, y)
    v = seeded("direction").standard_normal(x.size)
    assert_matches(cyad.gradient(loss, x, engine=engine), gradient, **tolerance, what="gradient")
    assert_matches(cyad.hessian(loss, x, engine=engine), hessian, **tolerance, what="hessian")
    assert_matches(cyad.hvp(loss, x, v, engine=engine), hessian @ v, **tolerance, what="hvp")


def _check_by_differences(program, x, engine):
    """Value, Jacobian, gradient, Hessian and HVP of a program nonlinear in x (a filter's
    coefficients) against central differences (of SciPy's values for the first order, of
    cyad's exact first order for the second); the engines agree to rounding."""
    (ref,) = by_differences(lambda xp, x: [np.ravel(program(x))], x)
    flat = lambda x: np.ravel(program(x))  # noqa: E731
    value, jacobian = cyad.value_and_jacobian(flat, x, engine=engine)
    assert_matches(value, ref.value, **EXACT, what="value")
    assert_matches(jacobian, ref.first, **DIFFERENCES, what="jacobian")
    w = seeded("weights").standard_normal(ref.value.shape)
    loss = lambda x: np.sum(flat(x) * w)  # noqa: E731
    hessian = np.tensordot(w, ref.second, 1)
    v = seeded("direction").standard_normal(x.size)
    assert_matches(cyad.gradient(loss, x, engine=engine), w @ ref.first, **DIFFERENCES,
                   what="gradient")
    got = cyad.hessian(loss, x, engine=engine)
    assert_matches(got, hessian, **DIFFERENCES, what="hessian")
    assert_matches(cyad.hvp(loss, x, v, engine=engine), got @ v, **EXACT, what="hvp")
    other = "tape" if engine == "dual" else "dual"
    assert_matches(got, cyad.hessian(loss, x, engine=other), **EXACT, what="engines")


# -- convolutions against JAX ---------------------------------------------------------------------

def _convolutions(xp, x):
    signal = ss if xp is np else jax.scipy.signal
    a, b = x[:9], x[9:13] ** 2
    m, k = xp.reshape(x[:20], (4, 5)), xp.reshape(x[20:26], (2, 3))
    t, u = xp.reshape(x[:24], (2, 3, 4)), xp.reshape(x[24:32], (2, 2, 2))
    y = []
    for name, method in itertools.product(("convolve", "correlate"), ("direct", "auto")):
        f = getattr(signal, name)
        for mode in ("full", "same", "valid"):
            y += [f(a, b, mode, method=method), f(m, k, mode, method=method),
                  f(t, u * xp.sin(u), mode, method=method)]
        # the smaller operand first: "valid" swaps them, "same" keeps in1's shape
        y += [f(b, a, "valid", method=method), f(k, m, "same", method=method),
              f(b, a, "full", method=method)]
    for name in ("convolve2d", "correlate2d"):
        f = getattr(signal, name)
        y += [f(m, k, mode) for mode in ("full", "same", "valid")]
        y += [f(k, m, "valid"), f(m, xp.reshape(x[30:34], (2, 2)) ** 3, "same")]
    return [xp.concatenate([xp.ravel(c) for c in y])]


@functools.cache
def _jax_reference(program, size):
    """JAX's Derivatives of program at X[:size], computed once for both engines."""
    return references([(program, X[:size])])[0][0]


@pytest.mark.skipif(jax is None, reason="JAX is the reference")
@pytest.mark.parametrize("engine", ENGINES)
def test_convolutions_against_jax(engine):
    x = X[:34]
    ref = _jax_reference(_convolutions, 34)
    f = lambda x: _convolutions(np, x)[0]  # noqa: E731
    assert_matches(f(x), ref.value, **ref.tolerance, what="SciPy's value against JAX's")
    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    assert_matches(value, ref.value, **ref.tolerance)
    assert_matches(jacobian, ref.first, **ref.tolerance)
    w = seeded("jax weights").standard_normal(ref.value.shape)
    hessian = np.tensordot(w, ref.second, 1)
    loss = lambda x: np.sum(f(x) * w)  # noqa: E731
    assert_matches(cyad.hessian(loss, x, engine=engine), hessian, **ref.tolerance)
    v = seeded("v").standard_normal(x.size)
    assert_matches(cyad.hvp(loss, x, v, engine=engine), hessian @ v, **ref.tolerance)


# -- every mode and boundary against SciPy -------------------------------------------------------

SHAPES = [((6,), (3,)), ((3,), (6,)), ((4,), (4,)), ((4, 5), (2, 3)), ((2, 3), (4, 5)),
          ((4, 2), (3, 4)), ((1,), (4,)), ((3, 4), (2, 2)), ((2, 3, 2), (2, 2, 3))]


def _convolution_cases():
    cases = []
    for (s1, s2), mode in itertools.product(SHAPES, ("full", "same", "valid")):
        fits = all(p >= q for p, q in zip(s1, s2)) or all(q >= p for p, q in zip(s1, s2))
        if mode == "valid" and not fits:
            continue
        cases += [(name, s1, s2, dict(mode=mode, method=method))
                  for name in ("convolve", "correlate") for method in ("direct", "auto")]
        if len(s1) == 2:
            cases += [(name, s1, s2, dict(mode=mode, boundary=boundary, fillvalue=fill))
                      for name in ("convolve2d", "correlate2d")
                      for boundary, fill in (("fill", 0), ("fill", 1.5), ("wrap", 0),
                                             ("symm", 0), ("circular", 0),
                                             ("symmetric", 0))]
    return cases


CONVOLUTIONS = _convolution_cases()


def _operands(s1, s2):
    n1, n2 = int(np.prod(s1)), int(np.prod(s2))
    # a on x[:n1], b on x[n1 // 2 : n1 // 2 + n2] and x[-1]: overlapping, both varying
    a_of = lambda x: np.reshape(x[:n1] * 1.0, s1)  # noqa: E731
    b_of = lambda x: np.reshape(x[n1 // 2:n1 // 2 + n2] - 0.5 * x[-1], s2)  # noqa: E731
    return a_of, b_of, max(n1, n1 // 2 + n2) + 1


def _case_id(case):
    name, s1, s2, kwargs = case
    return f"{name}{s1}{s2}-" + "-".join(str(v) for v in kwargs.values())


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CONVOLUTIONS, ids=_case_id)
def test_convolution(case, engine):
    name, s1, s2, kwargs = case
    a_of, b_of, size = _operands(s1, s2)
    f = lambda x: np.ravel(getattr(ss, name)(a_of(x), b_of(x), **kwargs))  # noqa: E731
    x = X[:size]
    jacobian, second = _quadratic_references(f, x)
    value, got = cyad.value_and_jacobian(f, x, engine=engine)
    assert_matches(value, f(x), **EXACT, what="value")
    assert_matches(got, jacobian, **EXACT, what="jacobian")
    w = seeded("weights").standard_normal(value.shape)
    loss = lambda x: np.sum(f(x) * w)  # noqa: E731
    hessian = np.tensordot(w, second, 1)
    v = seeded("v").standard_normal(size)
    assert_matches(cyad.gradient(loss, x, engine=engine), w @ jacobian, **EXACT, what="gradient")
    assert_matches(cyad.hessian(loss, x, engine=engine), hessian, **EXACT, what="hessian")
    assert_matches(cyad.hvp(loss, x, v, engine=engine), hessian @ v, **EXACT, what="hvp")


@pytest.mark.parametrize("engine", ENGINES)
def test_convolution_with_a_constant_operand(engine):
    kernel = np.array([[1.0, -2.0], [0.5, 3.0]])
    for f in (lambda x: ss.convolve2d(x.reshape(3, 4), kernel, "same", boundary="symm"),
              lambda x: ss.correlate(x.reshape(3, 4), kernel, "valid", method="direct"),
              lambda x: ss.convolve(kernel, x.reshape(3, 4), "full", method="direct"),
              lambda x: ss.convolve(x[:5], [1, 2, 3], "same", method="direct")):
        _check_linear(f, X[:12], engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_auto_follows_scipys_choice(engine, monkeypatch):
    # large operands: SciPy's choose_conv_method picks the FFT, and so does cyad (the direct
    # correlation is never called); small ones: the direct sum
    x = seeded("large").standard_normal(576)
    v = seeded("large direction").standard_normal(576)
    assert ss.choose_conv_method(np.ones((24, 24)), np.ones((8, 8)), "same") == "fft"
    assert ss.choose_conv_method(x[:20], x[:5], "same") == "direct"

    def refused(*args, **kwargs):
        raise AssertionError("the direct correlation, where SciPy computes by FFT")

    monkeypatch.setattr(scipy_signal, "correlation", refused)
    f = lambda x: ss.correlate(x.reshape(24, 24), x[:64].reshape(8, 8) ** 2, "same")  # noqa: E731
    # d correlate(a, k(x)) along v: correlate(va, k) + correlate(a, 2 k' vk), each SciPy's
    a, k = x.reshape(24, 24), x[:64].reshape(8, 8)
    expected = f(x), ss.correlate(v.reshape(24, 24), k ** 2, "same") + ss.correlate(
        a, 2 * k * v[:64].reshape(8, 8), "same")
    got = cyad.value_and_pushforward(f, x, v, engine=engine)
    assert_matches(got[0], expected[0], **EXACT)
    assert_matches(got[1], expected[1], **EXACT)
    with pytest.raises(AssertionError, match="direct correlation"):
        cyad.jacobian(lambda x: ss.correlate(x[:20], x[:5], "same"), x[:20], engine=engine)


def test_direct_values_are_scipys():
    # the values of method="direct" are SciPy's direct sums, to rounding, where the FFT's
    # would be off by far more relative to the small entries
    a = np.array([1e8, 1.0, 1e-8, 3.0, 1e-8])
    b = np.array([1e-8, 2.0, 1e8])
    for function in (ss.convolve, ss.correlate):
        expected = function(a, b, method="direct")
        got = cyad.value_and_jacobian(lambda x, f=function: f(x, b, method="direct"), a,
                                      engine="tape")[0]
        np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)


@pytest.mark.parametrize("engine", ENGINES)
def test_convolutions_in_float32(engine):
    def f(x):
        m = x[:12].reshape(3, 4)
        return np.concatenate([ss.convolve(x[:7], x[7:10] ** 2, "same", method="direct"),
                               ss.correlate2d(m, m[:2, :2], boundary="wrap").ravel(),
                               ss.convolve2d(m, m[1:, 1:], "valid").ravel()])

    x = X[:12].astype(np.float32)
    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    assert value.dtype == jacobian.dtype == np.float32
    exact_value, exact = cyad.value_and_jacobian(f, x.astype(np.float64), engine=engine)
    assert_matches(value, exact_value, **FLOAT32)
    assert_matches(jacobian, exact, **FLOAT32)


# -- lfilter --------------------------------------------------------------------------------------

B = np.array([0.2, -0.4, 0.3])
A = np.array([1.5, -0.6, 0.2])   # a stable filter, a[0] not 1: SciPy normalises


def _lfilter_programs():
    return {
        "x": lambda x: ss.lfilter(B, A, x[:9]),
        "x-fir": lambda x: ss.lfilter(B, 2.0, x[:9]),
        "x-longer-a": lambda x: ss.lfilter(B[:1], A, x[:9]),
        "x-zi": lambda x: np.concatenate(ss.lfilter(B, A, x[:9], zi=x[9:11])),
        "x-axis0": lambda x: ss.lfilter(B, A, x[:12].reshape(4, 3), axis=0),
        "x-axis0-zi-broadcast": lambda x: np.concatenate(
            [v.ravel() for v in ss.lfilter(B, A, x[:12].reshape(4, 3), axis=0,
                                            zi=x[12:14].reshape(2, 1))]),
        "x-3d": lambda x: ss.lfilter(B, A, x[:12].reshape(2, 3, 2), axis=1),
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(_lfilter_programs()))
def test_lfilter_in_x_and_zi(name, engine):
    _check_linear(_lfilter_programs()[name], X[:14], engine)


def _coefficient_programs():
    def one(x):
        return np.concatenate([[1.0], 0.3 * x[3:5]])

    return {
        "b-a": lambda x: ss.lfilter(x[:3], one(x), x[5:12]),
        "b-a0": lambda x: ss.lfilter(x[:3], np.concatenate([1.2 + 0.1 * x[5:6], 0.3 * x[3:5]]),
                                     x[6:12]),
        "b-only": lambda x: ss.lfilter(x[:4], A, x[4:11]),
        "a-only": lambda x: ss.lfilter(B, one(x), x[:8]),
        "a-longer": lambda x: ss.lfilter(x[:1], one(x), x[5:12]),
        "zi": lambda x: np.concatenate(ss.lfilter(x[:2], one(x), x[5:10], zi=x[10:12])),
        "zi-fir": lambda x: np.concatenate(ss.lfilter(x[:4], [1.0], x[5:10], zi=x[9:12])),
        "2d-axis0": lambda x: ss.lfilter(x[:2], one(x), x[:12].reshape(4, 3), axis=0),
        "2d-zi": lambda x: np.concatenate([v.ravel() for v in ss.lfilter(
            x[:3], one(x), x[:12].reshape(3, 4), zi=x[4:10].reshape(3, 2))]),
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(_coefficient_programs()))
def test_lfilter_in_its_coefficients(name, engine):
    _check_by_differences(_coefficient_programs()[name], 0.5 * X[:12], engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_lfilter_in_float32(engine):
    def f(x):
        return np.concatenate([ss.lfilter(x[:3], np.concatenate([[1.0], 0.3 * x[3:5]]), x[5:]),
                               ss.filtfilt(B, A, x, padlen=4)])

    x = (0.5 * X[:12]).astype(np.float32)
    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    assert value.dtype == jacobian.dtype == np.float32
    exact_value, exact = cyad.value_and_jacobian(f, x.astype(np.float64), engine=engine)
    assert_matches(value, exact_value, **FLOAT32)
    assert_matches(jacobian, exact, **FLOAT32)


@pytest.mark.parametrize("engine", ENGINES)
def test_fitting_iir_filter_coefficients(engine):
    # a user's problem: the coefficients of a second-order IIR filter that turns a known
    # input into a measured output, by least squares with cyad's gradient and Hessian
    u = seeded("input").standard_normal(200)
    b_true, a_true = ss.butter(2, 0.2)
    measured = ss.lfilter(b_true, a_true, u)

    def loss(theta):
        b, a = theta[:3], np.concatenate([[1.0], theta[3:]])
        return np.sum((ss.lfilter(b, a, u) - measured) ** 2)

    theta_true = np.concatenate([b_true, a_true[1:]])
    start = theta_true + np.array([0.05, -0.05, 0.02, 0.1, -0.05])
    gradient = cyad.gradient(loss, start, engine=engine)
    assert_matches(gradient, central_differences(lambda t: np.atleast_1d(loss(t)), start)[0],
                   **DIFFERENCES)
    hessian = cyad.hessian(loss, start, engine=engine)
    assert_matches(hessian, central_differences(
        lambda t: cyad.gradient(loss, t, engine=engine), start), **DIFFERENCES)
    fit = scipy.optimize.minimize(loss, start, method="trust-exact",
                                  jac=lambda t: cyad.gradient(loss, t, engine=engine),
                                  hess=lambda t: cyad.hessian(loss, t, engine=engine),
                                  options={"gtol": 1e-12})
    assert fit.success
    np.testing.assert_allclose(fit.x, theta_true, atol=1e-8)


# -- filtfilt, sosfilt, their initial states -----------------------------------------------------

SOS = ss.butter(4, 0.3, output="sos")


def _sos_of(x):
    # two sections, sos[0, 0], sos[0, 4], sos[1, 1] and sos[1, 5] moved by x (sos[:, 3] stays 1)
    z2, z3 = np.zeros(2), np.zeros(3)
    moved = np.concatenate([x[:1], z3, 0.2 * x[1:2], z2, x[2:3], z3, 0.2 * x[3:4]])
    return SOS + 0.1 * np.reshape(moved, (2, 6))


def _filter_programs():
    one = lambda x: np.concatenate([[1.0], 0.3 * x[3:5]])  # noqa: E731
    return {
        "filtfilt": lambda x: ss.filtfilt(x[:3], one(x), x[5:], padlen=4),
        "filtfilt-default-pad": lambda x: ss.filtfilt(x[:2], one(x)[:2], x),
        "filtfilt-even": lambda x: ss.filtfilt(x[:3], one(x), x, padtype="even"),
        "filtfilt-constant": lambda x: ss.filtfilt(x[:3], one(x), x, padtype="constant",
                                                   padlen=5),
        "filtfilt-none-2d": lambda x: ss.filtfilt(x[:3], one(x), x[:12].reshape(6, 2), axis=0,
                                                  padtype=None),
        "filtfilt-gust": lambda x: ss.filtfilt(x[:3], one(x), x[5:], method="gust"),
        "filtfilt-gust-irlen-2d": lambda x: ss.filtfilt(x[:3], one(x), x[:24].reshape(12, 2),
                                                        axis=0, method="gust", irlen=4),
        "lfilter_zi": lambda x: ss.lfilter_zi(x[:3], one(x) * (1.0 + x[5])),
        "lfilter_zi-longer-b": lambda x: ss.lfilter_zi(x[:4], one(x)[:2]),
        "sosfilt": lambda x: ss.sosfilt(_sos_of(x), x[4:]),
        "sosfilt-zi": lambda x: np.concatenate([v.ravel() for v in ss.sosfilt(
            _sos_of(x), x[4:16].reshape(2, 6), zi=np.reshape(x[:8], (2, 2, 2)))]),
        "sosfilt_zi": lambda x: ss.sosfilt_zi(_sos_of(x)),
        "sosfiltfilt": lambda x: ss.sosfiltfilt(_sos_of(x), x, padlen=6),
        "sosfiltfilt-2d": lambda x: ss.sosfiltfilt(_sos_of(x), x[:24].reshape(12, 2), axis=0,
                                                   padtype="even", padlen=3),
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(_filter_programs()))
def test_filters(name, engine):
    _check_by_differences(_filter_programs()[name], 0.5 * X[:24], engine)


def _linear_filter_programs():
    return {
        "filtfilt": lambda x: ss.filtfilt(B, A, x, padlen=5),
        "filtfilt-odd-default": lambda x: ss.filtfilt(B[:2], A[:2], x),
        "filtfilt-2d-axis0": lambda x: ss.filtfilt(B, A, x.reshape(12, 2), axis=0, padlen=4),
        "filtfilt-gust": lambda x: ss.filtfilt(B, A, x, method="gust"),
        "filtfilt-gust-irlen-axis0": lambda x: ss.filtfilt(B, A, x.reshape(12, 2), axis=0,
                                                           method="gust", irlen=5),
        "filtfilt-gust-order-0": lambda x: ss.filtfilt([0.5], [2.0], x, method="gust"),
        "sosfilt": lambda x: ss.sosfilt(SOS, x),
        "sosfilt-axis0": lambda x: ss.sosfilt(SOS, x.reshape(6, 4), axis=0),
        "sosfiltfilt": lambda x: ss.sosfiltfilt(SOS, x.reshape(2, 12), padlen=5),
    }


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(_linear_filter_programs()))
def test_filters_in_x(name, engine):
    _check_linear(_linear_filter_programs()[name], X[:24], engine)


# -- savgol_filter and detrend ------------------------------------------------------------------

def _savgol_cases():
    cases = [(w, p, d, mode) for w, p, d in ((5, 2, 0), (7, 3, 1), (6, 2, 0), (4, 3, 2), (1, 0, 0))
             for mode in ("interp", "mirror", "nearest", "wrap", "constant")]
    return cases + [(9, 2, 0, "mirror"), (13, 4, 1, "wrap"), (12, 2, 0, "interp")]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", _savgol_cases(), ids=lambda c: "-".join(map(str, c)))
def test_savgol_filter(case, engine):
    window, order, deriv, mode = case
    options = dict(deriv=deriv, delta=0.5, mode=mode, cval=0.7 if mode == "constant" else 0.0)
    # (affine where cval is not 0: SciPy's value at 0 subtracted)
    offset = ss.savgol_filter(np.zeros(12), window, order, **options)
    _check_linear(lambda x: ss.savgol_filter(x, window, order, **options) - offset, X[:12],
                  engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_savgol_filter_along_an_axis_and_in_float32(engine):
    for axis, mode in ((0, "interp"), (1, "interp"), (0, "nearest")):
        _check_linear(lambda x, axis=axis, mode=mode: ss.savgol_filter(x.reshape(6, 6), 5, 2,
                                                                 axis=axis, mode=mode),
                      X[:36], engine)
    f = lambda x: ss.savgol_filter(x, 7, 2, deriv=1)  # noqa: E731
    x = X[:16].astype(np.float32)
    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    assert value.dtype == jacobian.dtype == np.float32
    assert_matches(value, f(x), **FLOAT32)
    assert_matches(jacobian, basis_jacobian(f, 16), **FLOAT32)


DETRENDS = [dict(), dict(type="constant"), dict(bp=[4]), dict(bp=[3, 7, 8]),
            dict(axis=0), dict(axis=0, type="c"), dict(axis=0, bp=2)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kwargs", DETRENDS, ids=lambda k: "-".join(map(str, k.values())))
def test_detrend(kwargs, engine):
    shape = (12,) if "axis" not in kwargs else (6, 2)
    _check_linear(lambda x: ss.detrend(x.reshape(shape), **kwargs), X[:12], engine)


def _detrends(xp, x):
    signal = ss if xp is np else jax.scipy.signal
    m = xp.reshape(x, (4, 6))
    y = [signal.detrend(m ** 3), signal.detrend(xp.sin(m), axis=0, type="constant"),
         signal.detrend(m * x[0], bp=[2, 4])]
    return [xp.concatenate([xp.ravel(v) for v in y])]


@pytest.mark.skipif(jax is None, reason="JAX is the reference")
@pytest.mark.parametrize("engine", ENGINES)
def test_detrend_against_jax(engine):
    program = _detrends
    x = X[:24]
    ref = _jax_reference(_detrends, 24)
    value, jacobian = cyad.value_and_jacobian(lambda x: program(np, x)[0], x, engine=engine)
    assert_matches(value, ref.value, **ref.tolerance)
    assert_matches(jacobian, ref.first, **ref.tolerance)
    w = seeded("jax weights").standard_normal(ref.value.shape)
    assert_matches(cyad.hessian(lambda x: np.sum(program(np, x)[0] * w), x, engine=engine),
                   np.tensordot(w, ref.second, 1), **ref.tolerance)


# -- the primitives: adjoint identity, batches ---------------------------------------------------

def _adjoint(entry, primals, params, out_index=None):
    """<w, J v> = <J^T w, v> for the entry's JVP and VJP at plain primals."""
    rng = seeded(entry.name)
    directions = [rng.standard_normal(np.shape(p)) for p in primals]
    out, tangent = entry.jvp(primals, [d[None] for d in directions], **params)
    outs = out if isinstance(out, tuple) else (out,)
    tangents = tangent if isinstance(tangent, tuple) else (tangent,)
    weights = [rng.standard_normal(np.shape(o)) for o in outs]
    cotangent = tuple(weights) if isinstance(out, tuple) else weights[0]
    pulled = entry.vjp(primals, cotangent, **params)
    forward = sum(np.sum(w * t[0]) for w, t in zip(weights, tangents))
    reverse = sum(np.sum(c * d) for c, d in zip(pulled, directions) if c is not None)
    np.testing.assert_allclose(forward, reverse, rtol=1e-12)
    for p, c in zip(primals, pulled):
        assert c is None or np.shape(c) == np.shape(p)


CORRELATIONS = [((7,), (3,), (-2,), (9,)), ((7,), (3,), (4,), (5,)), ((3,), (5,), (-8,), (3,)),
                ((4, 5), (2, 3), (0, -1), (3, 5)), ((2, 4, 5), (2, 3), (1, -3), (2, 2)),
                ((4, 5), (3, 2, 3), (-1, 0), (4, 3)), ((2, 1, 6), (3, 3), (-2,), (6,))]


@pytest.mark.parametrize("case", CORRELATIONS, ids=str)
def test_correlation_adjoint(case):
    s1, s2, offsets, shape = case
    rng = seeded("correlation")
    a, b = rng.standard_normal(s1), rng.standard_normal(s2)
    _adjoint(scipy_signal.correlation.__cyad_entry__, [a, b],
             dict(offsets=offsets, shape=shape))
    # the value: the window's correlation, with zeros outside in1, element by element
    out = scipy_signal.correlation(a, b, offsets=offsets, shape=shape)
    k = len(shape)
    assert out.shape == np.broadcast_shapes(s1[:len(s1) - k], s2[:len(s2) - k]) + shape


FILTERS = [((3,), (2,), (7,), (2,), -1, 1), ((1,), (3,), (6,), (3,), -1, 1),
           ((4,), (0,), (5,), (3,), -1, 1), ((2, 3), (2,), (4, 2), (2, 2), -2, 2),
           ((3,), (2, 2), (2, 5, 2), (2, 5, 2), -1, 2), ((2,), (1,), (2, 1, 4), (1, 1), -1, 2)]


@pytest.mark.parametrize("case", FILTERS, ids=str)
def test_filter_adjoint(case):
    sb, sa, sx, szi, axis, ndim = case
    rng = seeded("filter")
    b, a, x, zi = (rng.standard_normal(s) for s in (sb, sa, sx, szi))
    _adjoint(scipy_signal.filtered.__cyad_entry__, [b, 0.3 * a, x, zi],
             dict(axis=axis, ndim=ndim))


def test_filter_values_are_lfilters():
    rng = seeded("lfilter values")
    b, a, x, zi = rng.standard_normal(3), rng.standard_normal(2), rng.standard_normal((2, 6)), \
        rng.standard_normal((2, 2))
    y, zf = scipy_signal.filtered(b, a, x, zi, axis=-1, ndim=2)
    expected = ss.lfilter(b, np.concatenate([[1.0], a]), x, zi=zi)
    np.testing.assert_array_equal(y, expected[0])
    np.testing.assert_array_equal(zf, expected[1])
    # a batch of coefficients: one lfilter each
    bs = rng.standard_normal((3, 3))
    y, zf = scipy_signal.filtered(bs, a, x[0], zi[0], axis=-1, ndim=1)
    for i in range(3):
        np.testing.assert_array_equal(y[i], ss.lfilter(bs[i], np.concatenate([[1.0], a]), x[0],
                                                       zi=zi[0])[0])


# -- what reaches cyad, and what is refused --------------------------------------------------------

def test_plain_calls_are_scipys():
    for name in scipy_signal.SCIPY_SIGNAL["scipy.signal"]:
        wrapper = getattr(ss, name)
        assert wrapper.__cyad_dispatching__ and wrapper.__name__ == name
    x = X[:12]
    assert np.array_equal(ss.lfilter(B, A, x), ss.lfilter.__wrapped__(B, A, x))
    assert np.array_equal(ss.savgol_filter(x, 5, 2), ss.savgol_filter.__wrapped__(x, 5, 2))


@pytest.mark.parametrize("engine", ENGINES)
def test_errors(engine):
    def jac(f):
        return cyad.jacobian(f, X[:12], engine=engine)

    with pytest.raises(NotImplementedError, match="complex"):
        jac(lambda x: np.real(ss.convolve2d(x.reshape(3, 4), np.ones((2, 2)) * 1j)))
    with pytest.raises(NotImplementedError, match="fillvalue"):
        jac(lambda x: ss.convolve2d(x.reshape(3, 4), np.ones((2, 2)), fillvalue=x[0]))
    with pytest.raises(NotImplementedError, match="delta"):
        jac(lambda x: ss.savgol_filter(x, 5, 2, deriv=1, delta=x[0]))
    with pytest.raises(ValueError, match="mode"):
        jac(lambda x: ss.convolve(x, x[:3], mode="circular", method="direct"))
    with pytest.raises(ValueError, match="boundary"):
        jac(lambda x: ss.correlate2d(x.reshape(3, 4), np.ones((2, 2)), boundary="reflect"))
    with pytest.raises(ValueError, match="2-D"):
        jac(lambda x: ss.convolve2d(x, x))
    with pytest.raises(ValueError, match="at least as large"):
        jac(lambda x: ss.convolve(x.reshape(3, 4), np.ones((4, 2)), "valid", method="direct"))
    with pytest.raises(ValueError, match="zi"):
        jac(lambda x: ss.lfilter(B, A, x, zi=x[:3])[0])
    with pytest.raises(ValueError, match="a\\[0\\]"):
        jac(lambda x: ss.lfilter(B, [0.0, 1.0], x))
    with pytest.raises(ValueError, match="sos\\[:, 3\\]"):
        jac(lambda x: ss.sosfilt(SOS * 2.0, x))
    with pytest.raises(ValueError, match="padlen"):
        jac(lambda x: ss.filtfilt(B, A, x[:8]))
    with pytest.raises(ValueError, match="window_length"):
        jac(lambda x: ss.savgol_filter(x[:4], 5, 2))
    with pytest.raises(ValueError, match="Trend type"):
        jac(lambda x: ss.detrend(x, type="quadratic"))


@pytest.mark.parametrize("engine", ENGINES)
def test_convolutions_of_complex_operands_take_the_fft(engine):
    def f(x):
        a = x[:5] + 1j * x[5:10]
        z = (ss.convolve(a, x[10:12], "same", method="direct")
             + ss.correlate(a, a[:3] * 1j, "same"))
        return np.concatenate([np.real(z), np.imag(z)])

    x = X[:12]
    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    assert_matches(value, f(x), **EXACT)
    assert_matches(jacobian, central_differences(f, x), **DIFFERENCES)



@pytest.mark.parametrize("outer", ENGINES)
@pytest.mark.parametrize("inner", ENGINES)
def test_a_derivative_inside_a_derivative(inner, outer):
    # the gradient in x of a filter's and a convolution's loss, differentiated in their
    # coefficients: the coefficients are the outer differentiation's arrays, x the inner's
    x0 = np.linspace(-1.0, 1.0, 9)

    def outer_f(theta, engine=inner):
        def inner_f(x):
            y = ss.lfilter(theta[:2], np.concatenate([[1.0], theta[2:3]]), x)
            return np.sum(np.sin(y) ** 2) + np.sum(ss.correlate(x, theta, "same",
                                                                method="direct") ** 2)
        return np.atleast_1d(np.sum(cyad.gradient(inner_f, x0, engine=engine) ** 2))

    theta = np.array([0.4, -0.3, 0.2])
    expected = central_differences(lambda t: outer_f(t, "dual"), theta)[0]
    assert_matches(cyad.gradient(lambda t: outer_f(t)[0], theta, engine=outer), expected,
                   **DIFFERENCES)

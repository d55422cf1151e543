"""Test programs of SciPy's functions outside NumPy's dispatch (cyad/_primitives/
scipy_functions.py), written once for SciPy and for JAX's jax.scipy: program(xp, x) with
xp NumPy or jax.numpy, as the scenarios of tests/test_primitives.py take them."""
import numpy as np
import scipy.fft
import scipy.linalg
import scipy.signal
import scipy.special

from derivative_references import JAX_SPECIAL

try:
    import jax.scipy.linalg
    import jax.scipy.special
except ImportError:
    jax = None

UPPER = np.triu(np.ones((3, 3)))
LOWER = UPPER.T


def scipy_of(xp):
    """(linalg, special) of SciPy for NumPy, of jax.scipy for jax.numpy."""
    if xp is np:
        return scipy.linalg, scipy.special
    return jax.scipy.linalg, jax.scipy.special


def _c(xp, x, a):
    return xp.asarray(a, dtype=x.dtype)


def _matrix(xp, x, shift=3.0):
    return x[:9].reshape(3, 3) + shift * xp.eye(3, dtype=x.dtype)


def _spd(xp, x):
    a = x[:9].reshape(3, 3)
    return a @ a.T + _c(xp, x, np.diag([1.0, 2.5, 4.0]))


def expm(xp, x):
    linalg, _ = scipy_of(xp)
    a = 0.5 * x[:9].reshape(3, 3)
    stack = 0.5 * x[:8].reshape(2, 2, 2)
    return linalg.expm(a) + xp.sum(linalg.expm(stack)) * a


def solve_triangular(xp, x):
    linalg, _ = scipy_of(xp)
    a, b = _matrix(xp, x), x[9:12]
    m = xp.stack([b, b * b, x[:3]], axis=1)
    return (linalg.solve_triangular(a, b, lower=True)
            + linalg.solve_triangular(a, b, trans=1)
            + linalg.solve_triangular(a, b, trans="T", lower=True, unit_diagonal=True)
            + xp.sum(linalg.solve_triangular(a, m, unit_diagonal=True), axis=1))


def lu(xp, x):
    # rows in an order that partial pivoting changes (the shifted diagonal is largest)
    linalg, _ = scipy_of(xp)
    a = _matrix(xp, x)[np.array([2, 0, 1])]
    lu_, piv = linalg.lu_factor(a)
    b = x[9:12]
    m = xp.stack([b, x[:3]], axis=1)
    return (linalg.lu_solve((lu_, piv), b) + linalg.lu_solve((lu_, piv), b, trans=1)
            + xp.sum(linalg.lu_solve((lu_, piv), m), axis=1) + xp.sum(lu_ * x[:9].reshape(3, 3),
                                                                      axis=0))


def cho(xp, x):
    linalg, _ = scipy_of(xp)
    s, b = _spd(xp, x), x[9:12]
    upper, lower = linalg.cho_factor(s), linalg.cho_factor(s, lower=True)
    factors = upper[0] * _c(xp, x, UPPER) + lower[0] * _c(xp, x, LOWER)
    return (linalg.cho_solve(upper, b) + linalg.cho_solve(lower, b * b)
            + xp.sum(factors * x[:9].reshape(3, 3), axis=1))


def solve(xp, x):
    linalg, _ = scipy_of(xp)
    a, s, b = _matrix(xp, x), _spd(xp, x), x[9:12]
    return (linalg.solve(a, b) + linalg.solve(s, b, assume_a="pos")
            + linalg.solve(s, b * b, assume_a="sym", lower=True))


def inv_det_cholesky(xp, x):
    linalg, _ = scipy_of(xp)
    a, s = _matrix(xp, x), _spd(xp, x)
    return (linalg.inv(a) * linalg.det(a) + linalg.cholesky(s)
            + linalg.cholesky(s, lower=True) * 0.5)


def decompositions(xp, x):
    """scipy.linalg's least squares, decompositions, norms, special matrices and banded solves
    (NumPy only: tests/test_scipy_linalg.py holds them to JAX)."""
    linalg = scipy.linalg
    a, s = _matrix(xp, x), _spd(xp, x)
    tall = xp.concatenate([a, xp.reshape(x[9:12], (1, 3))], axis=0)
    b = x[8:12]
    solution, residue, _, singular = linalg.lstsq(tall, b)
    w, v = linalg.eigh(s, lower=False)
    w2, v2 = linalg.eig(a)
    u, s2, vh = linalg.svd(tall, full_matrices=False)
    q, r = linalg.qr(tall, mode="economic")
    band = xp.stack([x[:4], x[4:8] + 3.0, x[8:12]])
    parts = [solution, residue, singular, linalg.pinv(tall), w, v * v,
             linalg.eigvalsh(a + a.T, s, subset_by_index=[1, 2]), xp.real(w2), v2 * v2,
             xp.real(linalg.eigvals(a)), u[:, :1] * vh[:1], s2, linalg.svdvals(a), q * r[0],
             linalg.qr(a)[1] ** 2, linalg.qr(tall, mode="r")[0] ** 2, linalg.norm(a, 1),
             linalg.norm(tall, axis=0), linalg.block_diag(x[0], x[1:3], a),
             linalg.toeplitz(x[:3], x[3:7]), linalg.circulant(x[:4]),
             linalg.hankel(x[:3], x[3:6]), linalg.solve_banded((1, 1), band, b),
             linalg.solveh_banded(band[:2], b)]
    return xp.concatenate([xp.ravel(p) for p in parts])


def logsumexp(xp, x):
    _, special = scipy_of(xp)
    a = x.reshape(3, 4)
    w = _c(xp, x, np.linspace(0.5, 2.0, 4))
    return (special.logsumexp(a, axis=1) + special.logsumexp(x)
            + special.logsumexp(a, axis=1, b=w) + special.logsumexp(a, axis=0, keepdims=True)[0, :3]
            + special.logsumexp(a, axis=1, return_sign=True)[0])


def softmax(xp, x):
    _, special = scipy_of(xp)
    a = x.reshape(3, 4)
    return (special.softmax(a, axis=1) * special.log_softmax(a, axis=0)
            + special.softmax(x).reshape(3, 4) + special.log_softmax(a))


def polygamma(xp, x):
    _, special = scipy_of(xp)
    y = xp.exp(0.5 * x) + 0.5
    return special.polygamma(0, y) + special.polygamma(1, y) * special.polygamma(3, y[::-1])


def multigammaln(xp, x):
    _, special = scipy_of(xp)
    y = xp.exp(0.5 * x) + 1.5     # above (d - 1) / 2 = 1
    return special.multigammaln(y, 3) * xp.sin(x)


def spherical_bessel(xp, x):
    """scipy.special's spherical Bessel functions, derivative=True too; for JAX, which has
    none, the references of tests/derivative_references.py."""
    def f(kind, n, z, derivative=False):
        if xp is np:
            return getattr(scipy.special, f"spherical_{kind}n")(n, z, derivative)
        return JAX_SPECIAL[f"_spherical_{kind}n" + ("_d" if derivative else "")](n, z)
    z = xp.exp(0.5 * x) + 0.2
    n = np.arange(12) % 4
    return (f("j", 2, z) ** 2 * f("k", 1, z) + f("y", n, z) * f("i", 0, z[::-1])
            + f("j", n, z, True) + f("k", 0, z, True) * f("i", n, z, True) + f("y", 1, z, True))


def _dst_of(xp, fft):
    """scipy.fft's DST-II and its inverse (and their n-dimensional forms) for JAX, which has
    the DCT-II alone: DST-II(x) is DCT-II((-1)^n x) reversed (the orthogonalized ends
    included, DCT-II's first bin being DST-II's last)."""
    def alternating(x, axes):
        for axis in axes:
            n = x.shape[axis]
            x = x * xp.reshape((-1.0) ** xp.arange(n), (n,) + (1,) * (x.ndim - 1 - axis))
        return x

    def dstn(x, type=2, axes=None, norm=None):
        axes = tuple(range(x.ndim)) if axes is None else axes
        return xp.flip(fft.dctn(alternating(x, axes), axes=axes, norm=norm), axis=axes)

    def idstn(x, type=2, axes=None, norm=None):
        axes = tuple(range(x.ndim)) if axes is None else axes
        return alternating(fft.idctn(xp.flip(x, axis=axes), axes=axes, norm=norm), axes)

    return (lambda x, type=2, axis=-1, norm=None: dstn(x, type, (axis % x.ndim,), norm),
            lambda x, type=2, axis=-1, norm=None: idstn(x, type, (axis % x.ndim,), norm),
            dstn, idstn)


def fourier_of(xp):
    """(scipy.fft, scipy.signal) for NumPy; for jax.numpy the same functions from
    jax.numpy.fft, jax.scipy.fft (the DSTs by `_dst_of`) and jax.scipy.signal (oaconvolve
    is fftconvolve: the same convolution)."""
    if xp is np:
        return scipy.fft, scipy.signal
    import types

    import jax.numpy as jnp
    import jax.scipy.fft
    import jax.scipy.signal
    dst, idst, dstn, idstn = _dst_of(jnp, jax.scipy.fft)
    fft = types.SimpleNamespace(**{name: getattr(jnp.fft, name) for name in (
        "fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "fftn", "ifftn",
        "rfft2", "irfft2", "rfftn", "irfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq")},
        dct=jax.scipy.fft.dct, idct=jax.scipy.fft.idct, dctn=jax.scipy.fft.dctn,
        idctn=jax.scipy.fft.idctn, dst=dst, idst=idst, dstn=dstn, idstn=idstn)
    signal = types.SimpleNamespace(
        fftconvolve=jax.scipy.signal.fftconvolve, oaconvolve=jax.scipy.signal.fftconvolve,
        convolve=jax.scipy.signal.convolve, correlate=jax.scipy.signal.correlate)
    return fft, signal


def fourier(xp, x):
    """Every function of scipy.fft and scipy.signal's FFT convolutions that cyad takes."""
    fft, signal = fourier_of(xp)
    m = x.reshape(3, 4)
    z = fft.fft(x[:6] * x[6:])
    transforms = [
        z, fft.ifft(x[:7], n=8, norm="ortho"), fft.rfft(x ** 2), fft.irfft(z[:4] * x[:4], n=7),
        fft.hfft(z[:4]), fft.ihfft(x[3:9], norm="forward"), fft.fft2(m), fft.ifft2(m * m),
        fft.fftn(m, axes=(0,)), fft.ifftn(m, s=(4, 3)), fft.rfft2(m), fft.irfft2(fft.rfft2(m ** 3)),
        fft.rfftn(m, s=(2, 5)), fft.irfftn(m, axes=(0,)), fft.fftshift(m), fft.ifftshift(x ** 2),
        fft.fftfreq(5, x[0] ** 2 + 1.0) * x[:5], fft.rfftfreq(6, x[1] ** 2 + 0.5) * x[:4],
        fft.dct(x, norm="ortho"), fft.idct(x ** 2, axis=0), fft.dst(m, norm="ortho"),
        fft.idst(m ** 2, axis=0), fft.dctn(m), fft.idctn(m, norm="ortho"),
        fft.dstn(m * m, axes=(1,)), fft.idstn(m, norm="ortho"),
        signal.fftconvolve(x[:7], x[7:] ** 2), signal.oaconvolve(m, m[1:, 1:], mode="same"),
        signal.convolve(x[:5], x[4:], mode="valid"),
        signal.correlate(x[:6], x[6:9] * x[:3], mode="same")]
    flat = [xp.ravel(t) for t in transforms]
    return xp.concatenate([part for t in flat for part in (
        (xp.real(t), xp.imag(t)) if xp.iscomplexobj(t) else (t,))])


SOS = scipy.signal.butter(4, 0.3, output="sos")


def signal(xp, x):
    """scipy.signal's direct convolutions, filters and smoothing that cyad takes (NumPy only:
    jax.scipy.signal has no lfilter and its kin; tests/test_scipy_signal.py holds them to
    JAX where it has them)."""
    m = xp.reshape(x, (3, 4))
    b, a = 0.5 * x[2:5], xp.concatenate([_c(xp, x, [1.0]), -0.3 * x[:2]])
    zeros = xp.zeros(5, dtype=x.dtype)
    sos = _c(xp, x, SOS) + 0.1 * xp.reshape(xp.concatenate([x[:1], zeros, x[1:2], zeros]),
                                            (2, 6))
    signal = scipy.signal
    y = [signal.convolve2d(m, m[:2, :2], boundary="symm"),
         signal.correlate2d(m, m[1:, 1:] ** 2, "same", boundary="wrap"),
         signal.convolve(x, x[:3], method="direct"),
         signal.correlate(m, m[:2, :2], "valid", method="direct"),
         signal.lfilter(b, a, x), signal.lfilter_zi(b, a), signal.filtfilt(b, a, x, padlen=3),
         signal.sosfilt(sos, x), signal.sosfilt_zi(sos), signal.sosfiltfilt(sos, x, padlen=3),
         signal.savgol_filter(x ** 2, 5, 2), signal.detrend(x ** 2, bp=[5])]
    return xp.concatenate([xp.ravel(t) for t in y])


def stats(xp, x):
    """scipy.stats' zscore and entropy (NumPy only: jax.scipy.stats has neither;
    tests/test_scipy_stats.py holds them to central differences, and the distributions to
    JAX)."""
    import scipy.stats
    m = xp.reshape(x, (3, 4))
    return xp.concatenate([scipy.stats.zscore(x), xp.ravel(scipy.stats.zscore(m, axis=1, ddof=1)),
                           xp.reshape(scipy.stats.entropy(x + 1.0), (1,)),
                           scipy.stats.entropy(m + 1.0, m[::-1] + 2.0, axis=1, base=2.0)])


def distributions(xp, x):
    """scipy.stats' distributions through their wrapped methods (NumPy only; the
    distributions are held to jax.scipy.stats in tests/test_scipy_stats.py)."""
    import scipy.stats
    q = 0.2 + 0.05 * x
    return xp.concatenate([scipy.stats.norm.logpdf(x, x[0], 1.0 + x[1] ** 2),
                           scipy.stats.logistic.sf(x, scale=2.0), scipy.stats.cauchy.isf(q),
                           scipy.stats.gamma.logpdf(1.0 + x ** 2, 2.0 + x[2] ** 2),
                           scipy.stats.poisson.logpmf(3, 1.0 + x ** 2)])


def sparse_products(xp, x):
    """Products and solves by a constant scipy.sparse matrix (NumPy only; held to JAX's
    dense products in tests/test_sparse_matrices.py)."""
    import scipy.sparse
    import scipy.sparse.linalg
    n = x.shape[0]
    a = scipy.sparse.diags_array([np.ones(n - 1), -2.5 * np.ones(n), np.ones(n - 1)],
                                 offsets=[-1, 0, 1], format="csr")
    return xp.concatenate([a @ (x ** 2), x @ a.tocsc(), scipy.sparse.linalg.spsolve(a, xp.sin(x))])


def sparse_of_derivatives(xp, x):
    """Sparse matrices whose entries move with x (diags, kron), their products and solves
    (NumPy only; held to JAX's dense ones in tests/test_sparse_varying.py)."""
    import scipy.sparse
    import scipy.sparse.linalg
    a = scipy.sparse.diags([x[1:], 3.0 + x ** 2, -x[:-1]], [-1, 0, 1], format="csr")
    k = scipy.sparse.kron(scipy.sparse.eye(2), scipy.sparse.diags(xp.sin(x)))
    return xp.concatenate([a @ x, x @ a, k @ xp.concatenate([x, x ** 2]),
                           scipy.sparse.linalg.spsolve(a, xp.cos(x))])


def interpolation(xp, x):
    """scipy.interpolate's splines built from x and evaluated at points moved by x (NumPy
    only; held to JAX and SciPy in tests/test_scipy_interpolate.py)."""
    import scipy.interpolate
    knots = np.linspace(0.0, 1.0, x.shape[0])
    points = np.linspace(0.05, 0.95, 5) + 0.01 * x[:5]
    spline = scipy.interpolate.CubicSpline(knots, xp.sin(x))
    bspline = scipy.interpolate.make_interp_spline(knots, x ** 2, k=3)
    return xp.concatenate([spline(points), bspline(points),
                           scipy.interpolate.interp1d(knots, x)(points)])


"""Complex arrays inside f (cyad._complex), on every engine: the ufunc rules' values against
NumPy's (branch cuts and signed zeros of the arguments included), NumPy's functions and a
complex array's methods, indexing and in-place writes against JAX, the complex functions on
real arrays, and the errors where NumPy's meaning would be lost."""
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
from cyad._complex import ComplexArray
from cyad._complex.ufuncs import UFUNCS

pytestmark = pytest.mark.xdist_group("test_complex")


# -- the rules' values -------------------------------------------------------------------------

# real and imaginary parts on both sides of every branch cut and pole, signed zeros too
_PARTS = np.array([0.0, -0.0, 1e-3, -1e-3, 0.5, -0.5, 1.0, -1.0, 2.0, -2.0, 3.5, -7.0])
_GRID = (_PARTS[:, None] + 1j * _PARTS[None, :]).ravel()


def _constant_complex(z):
    return ComplexArray(z.real.copy(), z.imag.copy(), z.shape, z.real.dtype)


def _as_numpy(result, dtype):
    if not isinstance(result, ComplexArray):
        return np.asarray(result)
    z = np.empty(result.shape, dtype)
    z.real, z.imag = result.real, result.imag
    return z


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
@pytest.mark.parametrize("ufunc", list(UFUNCS), ids=lambda u: u.__name__)
def test_rule_values_are_numpys(ufunc, dtype):
    z = _GRID.astype(dtype)
    operands = [z] if ufunc.nin == 1 else [z, z[::-1].copy()]
    with np.errstate(all="ignore"):
        expected = ufunc(*operands)
        got = ufunc(*[_constant_complex(o) for o in operands])
    got = _as_numpy(got, dtype)
    assert got.dtype == expected.dtype
    tolerance = 1e-13 if dtype == np.complex128 else 3e-6
    # (NumPy's own float32 functions differ in the last bits near the cuts)
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance, equal_nan=True)


def test_the_cuts_are_on_numpys_side():
    # just above and below the negative real axis (log, sqrt, power) and the imaginary axis
    # beyond +-i (arcsinh, arctan): the side the imaginary part's sign says, as in NumPy
    above, below = -2.0 + 0.0j, complex(-2.0, -0.0)
    for ufunc in (np.log, np.sqrt, np.arccos, np.arcsin, np.arccosh):
        for z in (above, below):
            got = _as_numpy(ufunc(_constant_complex(np.array([z]))), np.complex128)
            np.testing.assert_allclose(got, ufunc(np.array([z])), rtol=1e-14, atol=1e-14)
    for z in (complex(0.0, 2.0), complex(-0.0, 2.0)):
        for ufunc in (np.arcsinh, np.arctan):
            got = _as_numpy(ufunc(_constant_complex(np.array([z]))), np.complex128)
            np.testing.assert_allclose(got, ufunc(np.array([z])), rtol=1e-14, atol=1e-14)


# -- NumPy's functions and a complex array's methods, against JAX ------------------------------

N = 12


def _z(xp, x, shape=(2, 3)):
    """A complex array of x: its first half the real parts, its second the imaginary."""
    return xp.reshape(x[:6] + 1j * x[6:], shape)


def _w(xp, x):
    return xp.exp(1j * x[:6]) * (1.0 + x[::2])


_C = seeded("complex-constants").standard_normal((2, 3, 3))
C = _C[0] + 1j * _C[1]   # a complex constant matrix


# (name, function of (xp, x) -> a complex or real array)
FUNCTIONS = {
    "reshape": lambda xp, x: xp.reshape(_z(xp, x), (3, 2)),
    "transpose": lambda xp, x: xp.transpose(_z(xp, x)),
    "T": lambda xp, x: _z(xp, x).T,
    "concatenate": lambda xp, x: xp.concatenate([_z(xp, x), _z(xp, x[::-1])], axis=1),
    "concatenate-real": lambda xp, x: xp.concatenate([_w(xp, x), x[:3]]),
    "stack": lambda xp, x: xp.stack([_w(xp, x), x[6:] * 1.0]),
    "flip": lambda xp, x: xp.flip(_z(xp, x), axis=1),
    "take": lambda xp, x: xp.take(_w(xp, x), np.array([0, 3, 3, 5])),
    "diag": lambda xp, x: xp.diag(_w(xp, x)),
    "diff": lambda xp, x: xp.diff(_w(xp, x)),
    "trace": lambda xp, x: xp.trace(_z(xp, x, (3, 2))[:2]),
    "sum": lambda xp, x: xp.sum(_z(xp, x), axis=0),
    "mean": lambda xp, x: xp.mean(_z(xp, x)),
    "cumsum": lambda xp, x: xp.cumsum(_w(xp, x)),
    "broadcast_to": lambda xp, x: xp.broadcast_to(_w(xp, x), (2, 6)),
    "where": lambda xp, x: xp.where(x[:6] > 0.1, _w(xp, x), x[6:]),
    "dot": lambda xp, x: xp.dot(C, _z(xp, x).T),
    "inner": lambda xp, x: xp.inner(_w(xp, x), _z(xp, x).ravel()),
    "outer": lambda xp, x: xp.outer(_w(xp, x)[:3], x[:2]),
    "kron": lambda xp, x: xp.kron(_w(xp, x)[:2], _z(xp, x)),
    "tensordot": lambda xp, x: xp.tensordot(_z(xp, x), C, axes=1),
    "matmul": lambda xp, x: _z(xp, x) @ C,
    "matmul-both": lambda xp, x: _z(xp, x) @ _z(xp, x[::-1], (3, 2)),
    "matmul-real": lambda xp, x: xp.reshape(x[:6], (2, 3)) @ C,
    "einsum": lambda xp, x: xp.einsum("ij,jk->ik", _z(xp, x), C),
    "vdot": lambda xp, x: xp.vdot(_z(xp, x), _w(xp, x)),
    "vdot-constant": lambda xp, x: xp.vdot(C[0], _w(xp, x)[:3]),
    "vecdot": lambda xp, x: xp.vecdot(_z(xp, x), C[:2]),
    "correlate": lambda xp, x: xp.correlate(_w(xp, x), _z(xp, x)[0], mode="full"),
    "convolve": lambda xp, x: xp.convolve(_w(xp, x), _z(xp, x)[0]),
    "pad": lambda xp, x: xp.pad(_z(xp, x), 1),
    "roll": lambda xp, x: xp.roll(_w(xp, x), 2),
    "tile": lambda xp, x: xp.tile(_w(xp, x), 2),
    "repeat": lambda xp, x: xp.repeat(_w(xp, x), 2),
    "tril": lambda xp, x: xp.tril(_z(xp, x, (3, 2))[:2]),
    "moveaxis": lambda xp, x: xp.moveaxis(_z(xp, x), 0, 1),
    "expand_dims": lambda xp, x: xp.expand_dims(_w(xp, x), 0),
    "hstack": lambda xp, x: xp.hstack([_w(xp, x), _z(xp, x)[1]]),
    "vstack": lambda xp, x: xp.vstack([_w(xp, x)[:3], _z(xp, x)]),
    "cross": lambda xp, x: xp.cross(_z(xp, x), C[:2]),
    "trapezoid": lambda xp, x: xp.trapezoid(_w(xp, x)),
    "polyval": lambda xp, x: xp.polyval(_w(xp, x)[:3], _z(xp, x)),
    "real": lambda xp, x: xp.real(_w(xp, x)),
    "imag": lambda xp, x: xp.imag(_w(xp, x)),
    "abs": lambda xp, x: xp.abs(_w(xp, x)),
    "angle": lambda xp, x: xp.angle(_w(xp, x)),
    "angle-deg": lambda xp, x: xp.angle(_w(xp, x), deg=True),
    "conj-method": lambda xp, x: _w(xp, x).conj(),
    "real-attribute": lambda xp, x: _w(xp, x).real + _z(xp, x).imag.ravel(),
    "methods": lambda xp, x: _z(xp, x).reshape(3, 2).sum(axis=1) + _z(xp, x).ravel()[:3],
    "getitem": lambda xp, x: _z(xp, x)[1, ::-1] * _z(xp, x)[0, np.array([2, 0, 1])],
    "iteration": lambda xp, x: sum(row for row in _z(xp, x)),
    "mixed": lambda xp, x: (x[:6] - 2j) / _w(xp, x) + 3.0 ** _w(xp, x) + _w(xp, x) ** x[6:],
    "power-complex-exponent": lambda xp, x: (2.0 + x[:6] ** 2) ** (0.5 + 1j * x[6:]),
    "complex-base": lambda xp, x: (1 + 1j) ** x[:6],
    "divide-real": lambda xp, x: x[:6] / (2.0 + _w(xp, x)),
    "append": lambda xp, x: xp.append(_w(xp, x), _z(xp, x)),
    "array_split": lambda xp, x: xp.array_split(_w(xp, x), 4)[1],
    "split": lambda xp, x: xp.split(_z(xp, x), 3, axis=1)[2],
    "hsplit": lambda xp, x: xp.hsplit(_w(xp, x), [2])[1],
    "vsplit": lambda xp, x: xp.vsplit(_z(xp, x), 2)[0],
    "dsplit": lambda xp, x: xp.dsplit(xp.reshape(_w(xp, x), (1, 2, 3)), [1])[1],
    "atleast_1d": lambda xp, x: xp.atleast_1d(xp.sum(_w(xp, x))),
    "atleast_2d": lambda xp, x: xp.atleast_2d(_w(xp, x)),
    "block": lambda xp, x: xp.block([[_z(xp, x), _z(xp, x[::-1])]]),
    "broadcast_arrays": lambda xp, x: xp.broadcast_arrays(_w(xp, x)[:, None], x[:2])[0],
    "column_stack": lambda xp, x: xp.column_stack([_w(xp, x), x[6:]]),
    "dstack": lambda xp, x: xp.dstack([_z(xp, x), _z(xp, x[::-1])]),
    "copy": lambda xp, x: xp.copy(_w(xp, x)),
    "cumulative_sum": lambda xp, x: xp.cumulative_sum(_w(xp, x)),
    "delete": lambda xp, x: xp.delete(_w(xp, x), np.array([1, 4])),
    "insert": lambda xp, x: xp.insert(_w(xp, x), 2, _w(xp, x)[:2]),
    "diagflat": lambda xp, x: xp.diagflat(_z(xp, x)[0], 1),
    "diagonal": lambda xp, x: xp.diagonal(_z(xp, x, (3, 2))),
    "fliplr": lambda xp, x: xp.fliplr(_z(xp, x)),
    "flipud": lambda xp, x: xp.flipud(_z(xp, x)),
    "rot90": lambda xp, x: xp.rot90(_z(xp, x)),
    "gradient": lambda xp, x: xp.gradient(_w(xp, x)),
    "matrix_transpose": lambda xp, x: xp.matrix_transpose(_z(xp, x)),
    "matvec": lambda xp, x: xp.matvec(C[:2], _z(xp, x)),
    "vecmat": lambda xp, x: xp.vecmat(_z(xp, x), C),
    "ravel": lambda xp, x: xp.ravel(_z(xp, x)),
    "squeeze": lambda xp, x: xp.squeeze(_z(xp, x, (2, 1, 3))),
    "swapaxes": lambda xp, x: xp.swapaxes(_z(xp, x), 0, 1),
    "take_along_axis": lambda xp, x: xp.take_along_axis(_z(xp, x), np.array([[2, 0, 1]]), 1),
    "triu": lambda xp, x: xp.triu(_z(xp, x)),
    "real_if_close": lambda xp, x: (xp.real_if_close if xp is np else xp.real)(
        _w(xp, x) - 1j * xp.imag(_w(xp, x))),
    "empty_like": lambda xp, x: xp.zeros_like(_w(xp, x)) + (
        xp.empty_like(_w(xp, x)) * 0 if xp is np else 0) + _w(xp, x),
    "zeros_like": lambda xp, x: xp.zeros_like(_w(xp, x)) + _w(xp, x),
    "iscomplex": lambda xp, x: xp.where(xp.iscomplex(_w(xp, x)), x[:6], 0.0)
        + xp.where(xp.isreal(_w(xp, x)), 0.0, x[6:]),
    "linalg.cross": lambda xp, x: xp.linalg.cross(_z(xp, x), C[:2]),
    "linalg.matmul": lambda xp, x: xp.linalg.matmul(_z(xp, x), C),
    "linalg.matrix_transpose": lambda xp, x: xp.linalg.matrix_transpose(_z(xp, x)),
    "linalg.multi_dot": lambda xp, x: xp.linalg.multi_dot([_z(xp, x), C, C]),
    "linalg.outer": lambda xp, x: xp.linalg.outer(_w(xp, x), x[:2]),
    "linalg.tensordot": lambda xp, x: xp.linalg.tensordot(_z(xp, x), C, axes=1),
    "linalg.trace": lambda xp, x: xp.linalg.trace(_z(xp, x, (3, 2))[:2]),
    "linalg.vecdot": lambda xp, x: xp.linalg.vecdot(_z(xp, x), C[:2]),
    "astype": lambda xp, x: x[:6].astype(np.complex128) * 1j + _w(xp, x),
    "ones_like": lambda xp, x: xp.ones_like(x[:6], dtype=complex) * _w(xp, x),
    "full_like": lambda xp, x: xp.full_like(x[:6], 0.5 - 2j, dtype=complex) * x[6:],
    "full_like-of-a-variable": lambda xp, x: xp.full_like(x[:6], x[0], dtype=complex) * _w(xp, x),
}


def _real_pair(y):
    return [y] if not np.iscomplexobj(y) and not isinstance(y, ComplexArray) \
        and getattr(y, "dtype", np.dtype(float)).kind != "c" else None


POINT = seeded("complex-functions").uniform(-1.0, 1.0, N)
reference = named_references(FUNCTIONS, POINT)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_functions_against_jax(name, engine):
    exact = reference(name)
    f = lambda x: as_real_program(FUNCTIONS[name])(np, x)[0]  # noqa: E731
    value, jacobian = cyad.value_and_jacobian(f, POINT, engine=engine)
    tolerance = loosest(exact.tolerance, dict(rtol=1e-11, atol=1e-12))
    assert_matches(value, exact.value, **tolerance, what="value")
    assert_matches(jacobian, exact.first, **tolerance, what="jacobian")
    # and at second order: the Hessian of a weighted sum of the outputs
    weights = seeded(name).standard_normal(value.size)
    assert_matches(cyad.hessian(lambda x: np.dot(weights, f(x)), POINT, engine=engine),
                   np.tensordot(weights, exact.second, 1), **tolerance, what="hessian")


# the functions of the supported-functions table marked complex that are tested elsewhere:
# numpy.fft in tests/test_fourier.py, the shape queries and the tests of complexity below,
# numpy.linalg's in tests/test_complex_linalg.py
ELSEWHERE = {"fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
             "rfftn", "irfftn", "hfft", "ihfft", "fftshift", "ifftshift", "shape", "ndim",
             "size", "iscomplexobj", "isrealobj", "isreal",
             # numpy.linalg's decompositions and solvers: tests/test_complex_linalg.py
             "linalg.solve", "linalg.inv", "linalg.det", "linalg.slogdet", "linalg.eigh",
             "linalg.eigvalsh", "linalg.eig", "linalg.eigvals", "linalg.svd", "linalg.svdvals",
             "linalg.qr", "linalg.cholesky", "linalg.norm", "scipy.linalg.expm",
             "scipy.linalg.cholesky", "scipy.linalg.solve", "scipy.linalg.inv",
             "scipy.linalg.det"}
# scipy.fft's transforms and scipy.signal's convolutions: tests/test_scipy_fft.py
ELSEWHERE_MODULES = {"scipy.fft", "scipy.signal"}


def test_every_function_marked_complex_is_tested():
    from cyad._reporting.supported import supported_functions
    ufuncs = {name for name in dir(np) if isinstance(getattr(np, name), np.ufunc)}
    marked = {(row.module.removeprefix("numpy").removeprefix(".").replace("fft", "") + "."
               + row.name).lstrip(".") for row in supported_functions()
              if row.complex and row.name not in ufuncs and row.module not in ELSEWHERE_MODULES}
    tested = {name.split("-")[0] for name in FUNCTIONS} | ELSEWHERE
    assert marked - tested == set()


# -- writing into complex arrays ------------------------------------------------------------

def _written(x):
    z = np.zeros_like(x[:4], dtype=complex)   # constant parts, made the engine's by writes
    z.imag = x[:4]
    z += x[4:8]
    z *= 1.0 - 0.5j
    z[1:3] = np.exp(1j * x[8:10])
    z[0] = 2.0
    head = z[:2]                 # a view: writing it writes z
    head -= x[10:12] * 1j
    np.multiply(z, z, out=z)
    z.imag = z.imag * x[:4]
    return np.concatenate([np.real(z), np.imag(z)])


def _written_functionally(x):
    import jax.numpy as jnp
    z = x[:4] * 1j + x[4:8]
    z = z * (1.0 - 0.5j)
    z = z.at[1:3].set(jnp.exp(1j * x[8:10]))
    z = z.at[0].set(2.0)
    z = z.at[:2].add(-x[10:12] * 1j)
    z = z * z
    z = jnp.real(z) + 1j * (jnp.imag(z) * x[:4])
    return jnp.concatenate([jnp.real(z), jnp.imag(z)])


@pytest.mark.parametrize("engine", ENGINES)
def test_writes_into_complex_arrays_against_jax(engine):
    jax = pytest.importorskip("jax")
    expected = np.asarray(jax.jacfwd(_written_functionally)(POINT))
    assert_matches(cyad.jacobian(_written, POINT, engine=engine), expected, rtol=1e-12,
                   atol=1e-13)
    # and the values are NumPy's own
    assert_matches(cyad.value_and_jacobian(_written, POINT, engine=engine)[0],
                   _written(POINT), rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("engine", ENGINES)
def test_add_reduce_and_accumulate_are_sum_and_cumsum(engine):
    x = POINT[:6]
    w = np.exp(1j * np.arange(6.0))

    def by_methods(x):
        z = np.reshape(x * w, (2, 3))
        return np.concatenate([np.real(np.add.reduce(z)), np.imag(np.add.accumulate(z, 1)).ravel()])

    def by_functions(x):
        z = np.reshape(x * w, (2, 3))
        return np.concatenate([np.real(np.sum(z, 0)), np.imag(np.cumsum(z, 1)).ravel()])

    assert_matches(cyad.jacobian(by_methods, x, engine=engine),
                   cyad.jacobian(by_functions, x, engine=engine), rtol=0, atol=0)


def _aliased(x):
    z = x + 1j                       # (its real part is x's values: a write must not reach x)
    z[0] = 5.0
    v = np.zeros_like(x, dtype=complex)
    w = v[1:]                        # a view of parts not made yet: its write reaches v
    w[0] = x[1] * 1j
    u = v[::2]
    u *= 2.0
    return np.concatenate([x, z.real, v.imag, w.imag])


def _aliased_functionally(x):
    import jax.numpy as jnp
    z = (jnp.asarray(x) + 1j).at[0].set(5.0)
    v = jnp.zeros(3, complex).at[1].set(x[1] * 1j)
    v = v.at[::2].multiply(2.0)
    return jnp.concatenate([x, z.real, v.imag, v[1:].imag])


@pytest.mark.parametrize("engine", ENGINES)
def test_writes_reach_views_and_never_operands(engine):
    jax = pytest.importorskip("jax")
    x = POINT[:3]
    expected = np.asarray(jax.jacfwd(_aliased_functionally)(x))
    assert_matches(cyad.jacobian(_aliased, x, engine=engine), expected, rtol=0, atol=0)
    assert_matches(cyad.value_and_jacobian(_aliased, x, engine=engine)[0],
                   np.asarray(_aliased_functionally(x)), rtol=0, atol=0)


# -- the complex functions on real arrays ------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_complex_functions_of_real_arrays(engine):
    x = np.array([1.5, -0.5, 2.0, -0.0])
    seen = {}

    def f(x):
        seen["tests"] = (np.iscomplexobj(x), np.isrealobj(x), np.iscomplex(x).tolist(),
                         np.isreal(x).tolist())
        seen["angle"] = np.angle(x)
        return np.real(x) * 2.0 + np.imag(x) + np.real_if_close(x) ** 2 + np.angle(x, deg=True)

    value, jacobian = cyad.value_and_jacobian(f, x, engine=engine)
    assert_matches(value, f(x), rtol=1e-15, atol=0)
    np.testing.assert_array_equal(jacobian, np.diag(2.0 + 2.0 * x))
    assert seen["tests"] == (False, True, [False] * 4, [True] * 4)
    np.testing.assert_array_equal(np.asarray(seen["angle"]), np.angle(x))   # -0.0: pi


# -- precision and prepared calls ---------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
def test_float32_gives_complex64(engine):
    seen = []

    def f(x):
        z = np.exp(1j * x) * (x + 2j)
        seen.append((z.dtype, z.real.dtype))
        return np.sum(np.abs(z) ** 2 + np.angle(z))

    x = POINT[:5]
    got = cyad.gradient(f, x.astype(np.float32), engine=engine)
    assert got.dtype == np.float32
    assert seen[-1] == (np.complex64, np.float32)
    assert_matches(got, cyad.gradient(f, x, engine=engine), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("engine", ENGINES)
def test_prepared_calls_follow_the_point(engine):
    # a condition on complex values (np.where) and a division whose guard depends on them:
    # a prepared call is exact at points where the branches differ from the first
    def f(x):
        z = x * (1.0 + 1j) - 0.5j
        w = np.where(np.real(z) > 0, z, z * z)
        return np.sum(np.abs(w / (x + 1j)) ** 2)

    def exact(x):
        h = 1e-6
        return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)])

    x0 = np.array([0.5, -0.5, 1.0])
    prep = cyad.prepare_gradient(f, x0, engine=engine)
    out = np.empty(3)
    for x in (x0, -x0, np.array([-1.0, 2.0, 0.25])):
        cyad.gradient(f, x, prep=prep, out=out)
        assert_matches(out, exact(x), rtol=1e-7, atol=1e-8)


# -- what is refused -------------------------------------------------------------------------

@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("f, match", [
    (lambda x: np.sort(x * 1j), "numpy.sort of complex arrays is not supported"),
    (lambda x: np.maximum(x * 1j, 0), "complex numbers are not ordered"),
    (lambda x: np.max(x + 1j), "not supported"),
    (lambda x: (x * 1j).astype(float), "discard its imaginary part"),
    (lambda x: np.full_like(x, 1j) * x, "discard the imaginary part"),
    (lambda x: np.fft.rfft(x * 1j), "takes real input"),
    (lambda x: np.fft.fft(x, out=np.empty(3, complex)), "out= is not supported"),
    (lambda x: np.asarray(x * 1j), "cannot become a plain ndarray"),
])
def test_refused(f, match, engine):
    with pytest.raises(TypeError, match=match):
        cyad.jacobian(f, np.array([1.0, 2.0, 3.0]), engine=engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_complex_value_written_into_a_real_array_is_refused(engine):
    def f(x):
        y = x * 2.0
        y[0] = 1j * x[1]
        return y

    with pytest.raises(TypeError, match="complex"):
        cyad.jacobian(f, np.array([1.0, 2.0]), engine=engine)


def test_the_tape_refuses_a_complex_constant_it_would_cast():
    # a complex ndarray reaching a real operation of the tape is refused, not cast
    from cyad._tape.program import Tape
    with pytest.raises(TypeError, match="complex constant"):
        Tape(np.float64).const(np.array([1j]))

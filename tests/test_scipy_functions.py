"""SciPy's functions outside NumPy's dispatch (cyad/_primitives/scipy_functions.py and
cyad/_primitives/scipy_dispatch.py): how calls reach them, what they read, their errors.

Their derivatives at every order against jax.scipy are scenarios of
tests/test_primitives.py (tests/scipy_programs.py). Here the reference is SciPy itself:
fourth-order central differences of SciPy's function on plain arrays, at inputs where
SciPy reads a part of a matrix (one triangle, the factor's triangle of cho_factor's
result with whatever the other holds), so the conventions are SciPy's own.
"""
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.linalg as sl
import scipy.special as sp
import scipy_programs
from derivative_references import central_differences

import cyad
from cyad._primitives.scipy_functions import SCIPY_FUNCTIONS

ENGINES = ["dual", "tape"]
RNG = np.random.default_rng(7)
A = RNG.standard_normal((3, 3)) + 3.0 * np.eye(3)        # not symmetric
S = A @ A.T                                               # positive definite
B = RNG.standard_normal(3)
B2 = RNG.standard_normal((3, 2))


def _check(f, x, engine, **tolerance):
    """cyad's Jacobian of f (its NumPy/SciPy code on cyad's arrays) against central
    differences of f on plain arrays."""
    expected = central_differences(f, x)
    actual = cyad.jacobian(f, x, engine=engine)
    np.testing.assert_allclose(actual, expected, **(tolerance or dict(rtol=1e-6, atol=1e-7)))


def _m(x):
    return x[:9].reshape(3, 3)


def test_every_function_has_a_scenario(monkeypatch):
    # each function of SCIPY_FUNCTIONS is called by the scenarios of tests/scipy_programs.py
    called = set()
    for module, functions in SCIPY_FUNCTIONS.items():
        for name, function in list(functions.items()):
            def recording(*args, _name=f"{module}.{name}", _function=function, **kwargs):
                called.add(_name)
                return _function(*args, **kwargs)
            monkeypatch.setitem(functions, name, recording)
    programs = [scipy_programs.expm, scipy_programs.solve_triangular, scipy_programs.lu,
                scipy_programs.cho, scipy_programs.solve, scipy_programs.inv_det_cholesky,
                scipy_programs.decompositions,
                scipy_programs.logsumexp, scipy_programs.softmax, scipy_programs.polygamma,
                scipy_programs.multigammaln, scipy_programs.spherical_bessel,
                scipy_programs.fourier, scipy_programs.signal,
                scipy_programs.stats]
    for program in programs:
        cyad.jacobian(lambda x, program=program: program(np, x), 0.3 + 0.1 * np.arange(12.0))
    expected = {f"{m}.{name}" for m, functions in SCIPY_FUNCTIONS.items() for name in functions}
    assert called == expected


# -- what reaches cyad ------------------------------------------------------------------------

def test_plain_calls_are_scipys():
    for module in (sl, sp):
        for name in SCIPY_FUNCTIONS[module.__name__]:
            wrapper = getattr(module, name)
            assert wrapper.__cyad_dispatching__ and wrapper.__name__ == name
            assert wrapper.__doc__ == wrapper.__wrapped__.__doc__
    assert np.array_equal(sl.expm(A * 0.1), sl.expm.__wrapped__(A * 0.1))
    lu_piv = sl.lu_factor(A)
    assert np.array_equal(sl.lu_solve(lu_piv, B), sl.lu_solve.__wrapped__(lu_piv, B))
    w = np.abs(B2[:, 0])
    assert np.array_equal(sp.logsumexp(B, b=w), sp.logsumexp.__wrapped__(B, b=w))


def _run(code, tmp_path):
    # a fresh Python, outside the source folder (whose uncompiled cyad would shadow the
    # installed one)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=tmp_path)


@pytest.mark.parametrize("order", ["cyad first", "scipy first"])
def test_import_orders_that_reach_cyad(order, tmp_path):
    imports = ("import cyad\nimport scipy.linalg" if order == "cyad first"
               else "import scipy.linalg\nimport cyad")
    result = _run(imports + textwrap.dedent("""
        import numpy as np
        print(cyad.derivative(lambda t: scipy.linalg.expm(t * np.eye(2))[0, 0], 0.5))
        """), tmp_path)
    assert result.returncode == 0, result.stderr
    assert float(result.stdout) == pytest.approx(np.exp(0.5), rel=1e-14)


def test_scipy_imported_after_cyad_keeps_its_loader(tmp_path):
    # the import hook runs SciPy's loader, then installs: the module is otherwise SciPy's
    result = _run("""
        import cyad, inspect, importlib.resources, scipy.linalg
        assert scipy.linalg.expm.__cyad_dispatching__
        assert scipy.linalg.__spec__.loader.is_package("scipy.linalg")
        assert "def " in inspect.getsource(scipy.linalg.expm.__wrapped__)
        assert any(importlib.resources.files("scipy.linalg").iterdir())
        """, tmp_path)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_a_name_bound_before_cyad_is_named_in_the_error(engine, tmp_path):
    result = _run(f"""
        from scipy.linalg import expm
        from scipy.special import logsumexp
        import numpy as np
        import cyad
        for f in (expm, lambda x: logsumexp(x, axis=0)):
            try:
                cyad.gradient(lambda x: np.sum(f(x.reshape(2, 2))), np.ones(4),
                              engine="{engine}")
            except TypeError as error:
                print(error)
        """, tmp_path)
    assert result.returncode == 0, result.stderr
    expm_error, logsumexp_error = result.stdout.strip().split("\n")
    assert "It happened in scipy.linalg.expm" in expm_error
    assert "import cyad first, or call scipy.linalg.expm" in expm_error
    assert "It happened in scipy.special.logsumexp" in logsumexp_error


def test_a_scipy_function_without_a_rule_is_named(tmp_path):
    with pytest.raises(TypeError, match=r"It happened in scipy\.linalg\..*sqrtm, a SciPy "
                                        r"function cyad has no rule for: give it one with "
                                        r"cyad\.custom_derivative"):
        cyad.gradient(lambda x: np.sum(sl.sqrtm(x.reshape(2, 2))), np.eye(2).ravel() + 1.0)


# -- SciPy's conventions, against SciPy by central differences -----------------------------------

@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("assume_a", ["pos", "sym", "gen"])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_reads_what_scipy_reads(assume_a, lower, engine):
    x = np.concatenate([S.ravel(), B])
    _check(lambda x: sl.solve(_m(x), x[9:], assume_a=assume_a, lower=lower), x, engine)
    _check(lambda x: sl.solve(_m(x), x[9:], transposed=True), x, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("lower", [False, True])
def test_cholesky_and_cho_factor_read_one_triangle(lower, engine):
    x = S.ravel()
    _check(lambda x: sl.cholesky(_m(x), lower=lower), x, engine)
    # the whole of c: the factor in one triangle, the input's entries in the other
    _check(lambda x: sl.cho_factor(_m(x), lower=lower)[0], x, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("lower", [False, True])
def test_cho_solve_reads_the_factors_triangle(lower, engine):
    c, _ = sl.cho_factor(S, lower=lower)
    c = c + np.where(np.tri(3, k=-1, dtype=bool).T if lower else np.tri(3, k=-1, dtype=bool),
                     5.0, 0.0)    # other entries in the unread triangle
    x = np.concatenate([c.ravel(), B2.ravel()])
    _check(lambda x: sl.cho_solve((_m(x), lower), x[9:].reshape(3, 2)), x, engine)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_solve_triangular(trans, lower, unit_diagonal, engine):
    x = np.concatenate([A.ravel(), B2.ravel()])
    _check(lambda x: sl.solve_triangular(_m(x), x[9:].reshape(3, 2), trans=trans, lower=lower,
                                         unit_diagonal=unit_diagonal), x, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_lu_factor_and_lu_solve(engine):
    a = A[[2, 0, 1]]    # rows that partial pivoting reorders
    assert not np.array_equal(sl.lu_factor(a)[1], np.arange(3))
    x = np.concatenate([a.ravel(), B])
    _check(lambda x: sl.lu_factor(_m(x))[0], x, engine)
    for trans in (0, 1, 2):
        _check(lambda x, trans=trans: sl.lu_solve(sl.lu_factor(_m(x)), x[9:], trans=trans), x,
               engine)
    # the pivots carry no derivative; engine='tape' checks them on every replay
    prep = cyad.prepare_jacobian(lambda x: sl.lu_solve(sl.lu_factor(_m(x)), x[9:]), x,
                                 engine=engine)
    x2 = np.concatenate([A.ravel(), B])   # other pivots
    expected = central_differences(lambda x: sl.lu_solve(sl.lu_factor(_m(x)), x[9:]), x2)
    np.testing.assert_allclose(cyad.jacobian(lambda x: sl.lu_solve(sl.lu_factor(_m(x)), x[9:]),
                                             x2, prep=prep), expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("engine", ENGINES)
def test_expm_of_a_stack_and_a_nilpotent_matrix(engine):
    x = 0.4 * RNG.standard_normal(8)
    _check(lambda x: sl.expm(x.reshape(2, 2, 2)), x, engine)
    # d/dt expm(t N) at t = 0 is N
    n = np.triu(np.ones((3, 3)), 1)
    np.testing.assert_array_equal(cyad.derivative(lambda t: sl.expm(t * n), 0.0, engine=engine),
                                  n)


@pytest.mark.parametrize("engine", ENGINES)
def test_logsumexp_arguments(engine):
    x = RNG.standard_normal(12)
    w = np.array([0.5, -1.5, 2.0, 0.25])    # a negative weight: a sign of -1 somewhere
    for f in [lambda x: sp.logsumexp(x.reshape(3, 4), axis=(0, 1)),
              lambda x: sp.logsumexp(x.reshape(3, 4), axis=1, b=w, return_sign=True)[0],
              lambda x: sp.logsumexp(x.reshape(3, 4), axis=-1, keepdims=True),
              lambda x: sp.softmax(x.reshape(3, 4), axis=(0, 1)),
              lambda x: sp.log_softmax(x.reshape(3, 4), axis=-1)]:
        _check(f, x, engine)
    sign = sp.logsumexp(np.ones((3, 4)) * 0.0, axis=1, b=w, return_sign=True)[1]
    cyad_sign = cyad.jacobian(lambda x: np.sum(x) * 0.0 + sp.logsumexp(
        x.reshape(3, 4) * 0.0, axis=1, b=w, return_sign=True)[1], x, engine=engine)
    assert np.array_equal(cyad_sign, np.zeros((3, 12))) and np.array_equal(sign, [1.0] * 3)


@pytest.mark.parametrize("engine", ENGINES)
def test_logsumexp_and_softmax_at_ties_of_the_largest(engine):
    # the shift by the largest element cancels, also where it has no derivative (ties):
    # the gradient is softmax p and the Hessian diag(p) - p p^T
    x = np.array([1.0, 1.0, 0.5, -0.25])
    p = np.exp(x) / np.sum(np.exp(x))
    hessian = np.diag(p) - np.outer(p, p)
    np.testing.assert_allclose(cyad.gradient(sp.logsumexp, x, engine=engine), p, rtol=1e-14)
    np.testing.assert_allclose(cyad.hessian(sp.logsumexp, x, engine=engine), hessian,
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(cyad.jacobian(sp.softmax, x, engine=engine), hessian,
                               rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(cyad.jacobian(sp.log_softmax, x, engine=engine),
                               np.eye(4) - p, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
def test_polygamma_of_an_array_of_orders(engine):
    x = np.array([0.7, 1.9, 3.2, 5.0])
    n = np.array([0, 1, 2, 0])
    _check(lambda x: sp.polygamma(n, x), x, engine)
    np.testing.assert_allclose(cyad.jacobian(lambda x: sp.polygamma(2, x), x, engine=engine),
                               np.diag(sp.polygamma(3, x)), rtol=1e-13)


def test_errors():
    with pytest.raises(ValueError, match="assume_a='banded' is not supported"):
        cyad.gradient(lambda x: np.sum(sl.solve(_m(x), B, assume_a="banded")), A.ravel())
    with pytest.raises(ValueError, match=r"solve_triangular takes one square matrix \(2-D\)"):
        cyad.gradient(lambda x: np.sum(sl.solve_triangular(x.reshape(2, 2, 2), B[:2])),
                      np.ones(8))
    with pytest.raises(ValueError, match=r"lu_factor takes one square matrix .* shape \(2, 3\)"):
        cyad.gradient(lambda x: np.sum(sl.lu_factor(x.reshape(2, 3))[0]), np.ones(6))
    with pytest.raises(ValueError, match="trans must be one of"):
        cyad.gradient(lambda x: np.sum(sl.solve_triangular(_m(x), B, trans=3)), A.ravel())
    with pytest.raises(ValueError, match="order n must be integral"):
        cyad.gradient(lambda x: np.sum(sp.polygamma(0.5, x)), np.ones(2))

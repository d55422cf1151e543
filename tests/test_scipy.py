"""cyad.scipy: the derivative callables in SciPy's solvers, against independent references."""
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose

scipy = pytest.importorskip("scipy")
from scipy.integrate import solve_ivp  # noqa: E402
from scipy.optimize import least_squares, minimize, root  # noqa: E402

import cyad  # noqa: E402
import cyad.scipy as cs  # noqa: E402
from rosenbrock import (rosenbrock, rosenbrock_gradient, rosenbrock_hessian,  # noqa: E402
                        rosenbrock_in_place)

try:
    from scipy.optimize import approx_derivative  # noqa: E402
except ImportError:
    from scipy.optimize._numdiff import approx_derivative  # noqa: E402

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples" / "scipy"


class Counted:
    """fun, counting its calls (on floats and on duals alike)."""

    def __init__(self, fun):
        self.fun = fun
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.fun(*args)


def test_import_cyad_imports_no_scipy(tmp_path):
    # (run from elsewhere than the source tree, whose cyad/ is not built)
    code = ("import sys, cyad, cyad.scipy; "
            "assert 'scipy' not in sys.modules, sorted(m for m in sys.modules if 'scipy' in m)")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)


def test_every_public_function_has_a_numpydoc_docstring():
    for name in cs.__all__:
        if name == "DerivativeCheck":
            continue
        doc = getattr(cs, name).__doc__
        for section in ("Parameters", "Returns", "Raises", "Examples"):
            assert f"{section}\n    ----" in doc, (name, section)


# -- the callables against analytic derivatives ---------------------------------------------

X = np.linspace(-1.2, 1.3, 7)


def test_gradient_hessian_and_hessp_against_analytic():
    v = np.linspace(1.0, -1.0, 7)
    assert_allclose(cs.gradient(rosenbrock)(X), rosenbrock_gradient(X), rtol=1e-13)
    value, g = cs.value_and_gradient(rosenbrock)(X)
    assert isinstance(value, float) and value == pytest.approx(rosenbrock(X), rel=1e-15)
    assert_allclose(g, rosenbrock_gradient(X), rtol=1e-13)
    assert_allclose(cs.hessian(rosenbrock)(X), rosenbrock_hessian(X), rtol=1e-13, atol=1e-12)
    assert_allclose(cs.hessp(rosenbrock)(X, v), rosenbrock_hessian(X) @ v, rtol=1e-13)


def test_prepared_once_and_reused():
    jac = cs.gradient(rosenbrock)
    assert jac.prep is None
    first = jac(X)
    prep = jac.prep
    second = jac(X + 0.1)
    assert jac.prep is prep and second is not first   # a new result array per call
    assert_allclose(first, rosenbrock_gradient(X), rtol=1e-13)
    # from an x0 given up front
    hess = cs.hessian(rosenbrock, X)
    assert hess.prep is not None
    prep = hess.prep
    hess(X)
    assert hess.prep is prep


def test_prepared_adapter_refuses_another_shape():
    jac = cs.gradient(rosenbrock)
    jac(X)
    with pytest.raises(ValueError, match=r"shape \(8,\).*shape \(7,\)"):
        jac(np.ones(8))
    hessp = cs.hessp(rosenbrock, X)
    with pytest.raises(ValueError, match="shape"):
        hessp(X, np.ones(3))
    with pytest.raises(ValueError, match="scalar-valued"):
        cs.gradient(lambda x: x * 2.0)(X)
    with pytest.raises(ValueError, match="shape"):
        cs.ode_jacobian(lambda t, y: -y, y0=np.ones(3))(0.0, np.ones(4))


def test_wrong_arguments_are_refused():
    with pytest.raises(TypeError, match="callable"):
        cs.jacobian(3.0)
    with pytest.raises(TypeError, match="callable"):
        cs.ode_function(None)
    wrapper = cyad.FunctionWrapper(lambda x: x * 2.0)
    with pytest.raises(TypeError, match="no extra args"):
        cs.jacobian(wrapper)(X, 1.0)
    with pytest.raises(TypeError, match="has no t"):
        cs.ode_jacobian(wrapper)
    with pytest.raises(ValueError, match="kind"):
        cs.check_derivatives(rosenbrock, X, kind="laplacian")
    with pytest.raises(ValueError, match="scalar-valued"):
        cs.check_derivatives(np.sin, X, kind="hessian")


def test_float64_from_other_inputs():
    # SciPy passes float64 arrays; a list or float32 array is differentiated in float64
    jac = cs.jacobian(lambda x: x ** 2)
    assert_allclose(jac([1.0, 2.0]), np.diag([2.0, 4.0]))
    J = jac(np.array([1.0, 3.0], dtype=np.float32))
    assert J.dtype == np.float64
    assert_allclose(J, np.diag([2.0, 6.0]))


# -- args pass through like SciPy passes them ---------------------------------------------

def scaled(x, a, b):
    return np.sum(a * (x - b) ** 2) + np.sum(x ** 4)


def test_args_pass_through():
    a, b = np.linspace(1.0, 2.0, 7), 0.5
    g = 2.0 * a * (X - b) + 4.0 * X ** 3
    H = np.diag(2.0 * a + 12.0 * X ** 2)
    v = np.arange(7.0)
    assert_allclose(cs.gradient(scaled)(X, a, b), g, rtol=1e-13)
    assert_allclose(cs.value_and_gradient(scaled)(X, a, b)[1], g, rtol=1e-13)
    assert_allclose(cs.hessian(scaled)(X, a, b), H, rtol=1e-13)
    assert_allclose(cs.hessp(scaled)(X, v, a, b), H @ v, rtol=1e-13)
    assert_allclose(cs.jacobian(lambda x, a: a * x ** 2)(X, a), np.diag(2 * a * X), rtol=1e-13)
    # in a solver: the minimum of the convex objective, where its gradient vanishes
    res = minimize(scaled, np.zeros(7), args=(a, b), method="trust-exact",
                   jac=cs.gradient(scaled), hess=cs.hessian(scaled), options={"gtol": 1e-8})
    assert res.success
    assert_allclose(2.0 * a * (res.x - b) + 4.0 * res.x ** 3, 0.0, atol=1e-8)
    # the same adapter alternates between calls with and without args
    jac = cs.jacobian(lambda x, *k: x ** 2 * (k[0] if k else 1.0))
    for _ in range(2):
        assert_allclose(jac(X), np.diag(2 * X), rtol=1e-13)
        assert_allclose(jac(X, 3.0), np.diag(6 * X), rtol=1e-13)


# -- minimize: Rosenbrock at n = 100 --------------------------------------------------------

N = 100
X0 = np.linspace(-1.2, 1.2, N)


def finite_difference_gradient(f):
    # what jac="2-point" does; trust-exact and Newton-CG take only a callable jac
    return lambda x: approx_derivative(f, x, method="2-point")


@pytest.mark.parametrize("method, second", [("trust-exact", "hess"), ("Newton-CG", "hess"),
                                            ("Newton-CG", "hessp")])
def test_rosenbrock_minimize(method, second):
    f = Counted(rosenbrock)
    options = {"xtol": 1e-10} if method == "Newton-CG" else {}
    adapter = cs.hessian(f) if second == "hess" else cs.hessp(f)
    res = minimize(f, X0, method=method, jac=cs.gradient(f), **{second: adapter},
                   options=options)
    assert res.success
    assert_allclose(res.x, 1.0, atol=1e-7)
    cyad_calls = f.calls   # evaluations of f on floats (res.nfev) and on duals

    # The same method with finite differences. trust-exact takes only a callable Hessian
    # (no "2-point"/"3-point", no HessianUpdateStrategy): the central difference of the
    # finite-difference gradient, which is what hess="3-point" computes. Newton-CG takes
    # hess="3-point" itself (a HessianUpdateStrategy such as BFGS() runs, but stops far
    # from the minimum). The finite-difference evaluations happen inside callables, where
    # SciPy's nfev does not see them, so f counts its own calls. Full runs at n = 100 take
    # a minute (trust-exact) and seconds (Newton-CG), so the comparison here is a lower
    # bound: the first few iterations with finite differences (3 of trust-exact's ~140, 20
    # of Newton-CG's ~130) already evaluate f several times as often as cyad's whole solve.
    # examples/scipy/rosenbrock_minimize.py runs both to convergence.
    g = Counted(rosenbrock)
    fd_gradient = finite_difference_gradient(g)
    fd_hessian = ((lambda x: approx_derivative(fd_gradient, x, method="3-point"))
                  if method == "trust-exact" else "3-point")
    iterations = 3 if method == "trust-exact" else 20
    fd = minimize(g, X0, method=method, jac=fd_gradient, hess=fd_hessian,
                  options=dict(options, maxiter=iterations))
    assert fd.nit == iterations
    assert g.calls > 5 * cyad_calls


def test_rosenbrock_minimize_fewer_evaluations_to_convergence():
    # the full comparison where it is quick: n = 20, both methods to convergence
    x0 = X0[::5]
    for method in ["trust-exact", "Newton-CG"]:
        options = {"xtol": 1e-10} if method == "Newton-CG" else {}
        f, g = Counted(rosenbrock), Counted(rosenbrock)
        res = minimize(f, x0, method=method, jac=cs.gradient(f), hess=cs.hessian(f),
                       options=options)
        fd_gradient = finite_difference_gradient(g)
        fd_hessian = ((lambda x, fd_gradient=fd_gradient:
                       approx_derivative(fd_gradient, x, method="3-point"))
                      if method == "trust-exact" else "3-point")
        fd = minimize(g, x0, method=method, jac=fd_gradient, hess=fd_hessian, options=options)
        assert res.success
        assert_allclose(res.x, 1.0, atol=1e-7)
        assert_allclose(fd.x, 1.0, atol=1e-3)   # (Newton-CG reports a loss of precision)
        assert f.calls < g.calls / 10


@pytest.mark.parametrize("method, second", [("trust-exact", "hess"), ("Newton-CG", "hess"),
                                            ("Newton-CG", "hessp")])
def test_rosenbrock_written_in_place_minimizes_like_rosenbrock(method, second):
    # in-place updates of the intermediates once gave wrong Hessians: trust-exact then
    # failed after thousands of iterations and Newton-CG stopped 0.4 from the minimum
    options = {"xtol": 1e-10} if method == "Newton-CG" else {}
    runs = []
    for f in (rosenbrock, rosenbrock_in_place):
        adapter = cs.hessian(f) if second == "hess" else cs.hessp(f)
        runs.append(minimize(f, X0, method=method, jac=cs.gradient(f), **{second: adapter},
                             options=options))
    plain, in_place = runs
    assert in_place.success
    assert_allclose(in_place.x, 1.0, atol=1e-7)
    assert in_place.nit == plain.nit


def test_value_and_gradient_evaluates_f_once_per_solver_call():
    f = Counted(rosenbrock)
    fg = cs.value_and_gradient(f, engine="dual")
    res = minimize(fg, X0[::10], jac=True, method="BFGS", options={"gtol": 1e-9})
    assert res.success
    assert_allclose(res.x, 1.0, atol=1e-6)
    assert fg.prep.evaluations == 1
    assert res.nfev == res.njev
    assert f.calls == res.nfev     # one evaluation (on duals) gives the value and gradient
    # whereas fun and jac= separately evaluate it twice
    f.calls = 0
    res = minimize(f, X0[::10], jac=cs.gradient(f, engine="dual"), method="BFGS",
                   options={"gtol": 1e-9})
    assert f.calls == res.nfev + res.njev
    # the default engine, the tape, records f once and replays it for every solver call
    f.calls = 0
    fg = cs.value_and_gradient(f)
    res = minimize(fg, X0[::10], jac=True, method="BFGS", options={"gtol": 1e-9})
    assert res.success and fg.prep.engine == "tape"
    assert_allclose(res.x, 1.0, atol=1e-6)
    assert f.calls == 1


def test_c_function_objective(example):
    # a FunctionWrapper of C functions (first and second order): examples/cython's Rosenbrock
    f = example.rosenbrock_function()
    res = minimize(cs.value_and_gradient(f), X0, jac=True, hess=cs.hessian(f),
                   method="trust-exact")
    assert res.success
    assert_allclose(res.x, 1.0, atol=1e-7)


# -- least_squares and root ---------------------------------------------------------------

def michaelis_menten(p, s, v):
    return p[0] * s / (p[1] + s) - v


def test_least_squares_michaelis_menten():
    s = np.linspace(0.1, 10.0, 25)
    true = np.array([3.4, 1.7])
    v = true[0] * s / (true[1] + s)
    jac = cs.jacobian(michaelis_menten)
    analytic = np.column_stack([s / (2.0 + s), -1.5 * s / (2.0 + s) ** 2])
    assert_allclose(jac(np.array([1.5, 2.0]), s, v), analytic, rtol=1e-14)
    for method in ["trf", "lm", "dogbox"]:
        fit = least_squares(michaelis_menten, [1.0, 1.0], jac=jac, args=(s, v), method=method,
                            xtol=1e-14, ftol=1e-14, gtol=1e-14)
        assert fit.success
        assert_allclose(fit.x, true, rtol=1e-10)
        assert fit.njev >= 1


def test_least_squares_exponential_decay_with_offset():
    t = np.linspace(0.0, 4.0, 40)
    true = np.array([2.0, 0.8, 0.3])
    y = true[0] * np.exp(-true[1] * t) + true[2]

    def residuals(p):
        return p[0] * np.exp(-p[1] * t) + p[2] - y

    fit = least_squares(residuals, [1.0, 1.0, 0.0], jac=cs.jacobian(residuals),
                        xtol=1e-14, ftol=1e-14, gtol=1e-14)
    assert_allclose(fit.x, true, rtol=1e-10)
    fd = least_squares(residuals, [1.0, 1.0, 0.0], xtol=1e-14, ftol=1e-14, gtol=1e-14)
    assert_allclose(fd.x, true, rtol=1e-6)


def broyden_tridiagonal(x):
    # (3 - 2 x_i) x_i - x_{i-1} - 2 x_{i+1} + 1 = 0, with x_0 = x_{n+1} = 0
    before = np.concatenate([np.zeros_like(x[:1]), x[:-1]])
    after = np.concatenate([x[1:], np.zeros_like(x[:1])])
    return (3.0 - 2.0 * x) * x - before - 2.0 * after + 1.0


@pytest.mark.parametrize("method", ["hybr", "lm"])
def test_root_broyden_tridiagonal(method):
    n = 50
    x0 = -np.ones(n)
    sol = root(broyden_tridiagonal, x0, jac=cs.jacobian(broyden_tridiagonal), method=method,
               options={"xtol": 1e-13})
    assert sol.success
    assert_allclose(broyden_tridiagonal(sol.x), 0.0, atol=1e-10)
    fd = root(broyden_tridiagonal, x0, method=method, options={"xtol": 1e-13})
    assert_allclose(sol.x, fd.x, atol=1e-9)
    # the Jacobian: tridiagonal, 3 - 4 x_i on the diagonal
    J = cs.jacobian(broyden_tridiagonal)(sol.x)
    expected = np.diag(3.0 - 4.0 * sol.x) - np.eye(n, k=-1) - 2.0 * np.eye(n, k=1)
    assert_allclose(J, expected, rtol=1e-14)


# -- solve_ivp: stiff problems -----------------------------------------------------------------

def robertson(dydt, t, y):
    # in place, output first: rhs(dydt, t, y)
    dydt[0] = -0.04 * y[0] + 1e4 * y[1] * y[2]
    dydt[1] = 0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2
    dydt[2] = 3e7 * y[1] ** 2


def robertson_out_of_place(t, y):
    return np.stack([-0.04 * y[0] + 1e4 * y[1] * y[2],
                     0.04 * y[0] - 1e4 * y[1] * y[2] - 3e7 * y[1] ** 2,
                     3e7 * y[1] ** 2])


def robertson_jacobian(y):
    return np.array([[-0.04, 1e4 * y[2], 1e4 * y[1]],
                     [0.04, -1e4 * y[2] - 6e7 * y[1], -1e4 * y[1]],
                     [0.0, 6e7 * y[1], 0.0]])


def reaction_diffusion(t, u, D, h):
    # u_t = D u_xx + u (1 - u) on (0, 1]: u = 0 at x = 0, du/dx = 0 at x = 1 (mirror point)
    left = np.concatenate([np.zeros_like(u[:1]), u[:-1]])
    right = np.concatenate([u[1:], u[-2:-1]])
    return D * (left - 2.0 * u + right) / h ** 2 + u * (1.0 - u)


def reaction_diffusion_in_place(dudt, t, u, D, h):
    dudt[1:-1] = D * (u[:-2] - 2.0 * u[1:-1] + u[2:]) / h ** 2
    dudt[0] = D * (u[1] - 2.0 * u[0]) / h ** 2
    dudt[-1] = D * (2.0 * u[-2] - 2.0 * u[-1]) / h ** 2
    dudt += u * (1.0 - u)


def reaction_diffusion_problem(n):
    h = 1.0 / n
    x = np.linspace(h, 1.0, n)
    return np.exp(-50.0 * (x - 0.5) ** 2), (0.1, h)


def test_ode_jacobian_against_analytic():
    y = np.array([0.9, 3e-5, 0.1])
    assert_allclose(cs.ode_jacobian(robertson, in_place=True)(0.0, y), robertson_jacobian(y),
                    rtol=1e-14)
    assert_allclose(cs.ode_jacobian(robertson_out_of_place)(0.0, y), robertson_jacobian(y),
                    rtol=1e-14)
    # t passes through; args too, in both forms
    u0, (D, h) = reaction_diffusion_problem(10)
    expected = approx_derivative(lambda u: reaction_diffusion(0.0, u, D, h), u0, method="cs")
    assert_allclose(cs.ode_jacobian(reaction_diffusion)(0.0, u0, D, h), expected, rtol=1e-12)
    assert_allclose(cs.ode_jacobian(reaction_diffusion_in_place, in_place=True)(0.0, u0, D, h),
                    expected, rtol=1e-12)
    assert_allclose(cs.ode_function(reaction_diffusion_in_place)(0.0, u0, D, h),
                    reaction_diffusion(0.0, u0, D, h), rtol=1e-13)
    seen = []
    jac = cs.ode_jacobian(lambda t, y, k: seen.append((t, k)) or -k * t * y)
    assert_allclose(jac(2.0, np.ones(2), 3.0), -6.0 * np.eye(2))
    assert seen and all(s == (2.0, 3.0) for s in seen)    # (every evaluation: the call's)


def solve(fun, y0, span, method, jac, args=()):
    return solve_ivp(fun, span, y0, method=method, jac=jac, args=args, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("method", ["BDF", "Radau", "LSODA"])
def test_robertson_stiff_kinetics(method):
    rhs = Counted(robertson)
    fun = cs.ode_function(rhs)
    y0 = [1.0, 0.0, 0.0]
    exact = solve(fun, y0, (0.0, 40.0), method, cs.ode_jacobian(rhs, in_place=True))
    cyad_calls = rhs.calls
    rhs.calls = 0
    fd = solve(fun, y0, (0.0, 40.0), method, None)
    assert exact.success and fd.success
    assert exact.njev >= 1 and exact.nfev > 0 and fd.njev >= 1 and fd.nfev > 0
    assert_allclose(exact.y[:, -1], fd.y[:, -1], rtol=1e-5, atol=1e-10)
    # the known state at t = 40 (Hairer & Wanner), to the integration's accuracy
    assert_allclose(exact.y[:, -1], [0.7158271, 9.185535e-06, 0.2841637], rtol=1e-4)
    assert_allclose(exact.y.sum(axis=0), 1.0, atol=1e-8)   # mass is conserved
    # BDF and Radau do not count their finite-difference evaluations in nfev: the rhs does
    assert cyad_calls < rhs.calls


@pytest.mark.parametrize("method", ["BDF", "Radau", "LSODA"])
def test_reaction_diffusion(method):
    n = 100
    u0, args = reaction_diffusion_problem(n)
    rhs = Counted(reaction_diffusion)
    exact = solve(rhs, u0, (0.0, 10.0), method, cs.ode_jacobian(rhs), args)
    cyad_calls = rhs.calls
    rhs.calls = 0
    fd = solve(rhs, u0, (0.0, 10.0), method, None, args)
    assert exact.success and fd.success
    assert exact.njev >= 1 and fd.njev >= 1
    assert_allclose(exact.y[:, -1], fd.y[:, -1], rtol=1e-5, atol=1e-8)
    assert 0.5 < exact.y[-1, -1] < 1.0
    # each finite-difference Jacobian costs n evaluations, cyad's one (on duals)
    assert rhs.calls >= n * fd.njev
    assert cyad_calls < rhs.calls
    # the in-place form of the same system
    fun = cs.ode_function(reaction_diffusion_in_place)
    in_place = solve(fun, u0, (0.0, 10.0), method,
                     cs.ode_jacobian(reaction_diffusion_in_place, in_place=True), args)
    assert_allclose(in_place.y[:, -1], exact.y[:, -1], rtol=1e-8, atol=1e-12)


# -- check_derivatives --------------------------------------------------------------------------

def test_check_derivatives():
    small = cs.check_derivatives(rosenbrock, X)
    assert small.kind == "gradient"
    assert small.max_rel_error < 1e-8 and small.max_abs_error < 1e-5
    assert_allclose(small.derivative, rosenbrock_gradient(X), rtol=1e-13)
    hess = cs.check_derivatives(rosenbrock, X, kind="hessian")
    assert hess.derivative.shape == (7, 7) and hess.max_rel_error < 1e-4
    u0, args = reaction_diffusion_problem(12)
    jac = cs.check_derivatives(lambda u, D, h: reaction_diffusion(0.0, u, D, h), u0, args=args)
    assert jac.kind == "jacobian" and jac.max_rel_error < 1e-8
    # a derivative of another shape of x: the comparison is entry by entry
    m = cs.check_derivatives(lambda A: np.sum(A ** 3), np.arange(6.0).reshape(2, 3))
    assert m.derivative.shape == (2, 3) and m.max_rel_error < 1e-8
    # a hand-written Jacobian with one wrong entry, and cyad's own callable
    y = np.array([0.9, 3e-5, 0.1])

    def wrong(y):
        J = robertson_jacobian(y)
        J[1, 1] *= 1.01
        return J

    def rhs(y):
        return robertson_out_of_place(0.0, y)
    bad = cs.check_derivatives(rhs, y, derivative=wrong)
    assert bad.max_abs_error > 10.0 and bad.max_rel_error > 1e-3
    good = cs.check_derivatives(rhs, y, derivative=cs.jacobian(rhs))
    assert good.max_rel_error < 1e-8


# -- allocations -----------------------------------------------------------------------------

def test_a_prepared_call_allocates_its_result_and_what_f_allocates(allocations_per_call):
    # Per call: prep.evaluations times what f allocates on the prep's dual input, plus the
    # result (the constant: what allocating the returned array(s) costs, measured the same
    # way: np.empty(n) one object, np.empty((n, n)) two, as its data exceeds NumPy's cache of
    # small blocks).
    n = 12
    x, w, v = np.linspace(0.1, 1.2, n), np.linspace(1.0, 2.0, n), np.ones(n)

    def objective(x):
        return (x * w).sum()

    def residuals(x):
        return x * w

    def rhs(t, y):
        return y * w

    def rhs_in_place(dydt, t, y):
        dydt[...] = y * w

    def count(fn):
        return allocations_per_call(fn, short=100, long=300)

    vector = count(lambda: np.empty(n))
    matrix = count(lambda: np.empty((n, n)))
    value = np.zeros(())
    pair = count(lambda: (float(value), np.empty(n)))
    t = 0.5
    cases = [
        # on the dual engine, which evaluates f in every call (the tape's calls: test_tape)
        (cs.gradient(objective, engine="dual"), (x,), objective, vector),
        (cs.value_and_gradient(objective, engine="dual"), (x,), objective, pair),
        (cs.hessian(objective, engine="dual"), (x,), objective, matrix),
        (cs.hessp(objective, engine="dual"), (x, v), objective, vector),
        (cs.jacobian(residuals, engine="dual"), (x,), residuals, matrix),
    ]
    for adapter, args, f, result in cases:
        adapter(*args)
        prep = adapter.prep
        per_evaluation = count(lambda f=f, prep=prep: f(prep.input_dual))
        per_call = count(lambda adapter=adapter, args=args: adapter(*args))
        assert per_evaluation > 0
        assert per_call == pytest.approx(prep.evaluations * per_evaluation + result, abs=0.01), \
            adapter

    # with t or args, each evaluation is f's through the prep's Bound (f of x alone, the
    # other arguments set per call); a call adds the tuple of its arguments' leaves the
    # Bound hands f, and with extra args the operator's call with them (its positional
    # arguments, its keywords, the operator's tuple of args): 1 and 4 objects
    cases = [
        (cs.ode_jacobian(rhs, engine="dual"), (t, x), matrix, False, 1),
        (cs.ode_jacobian(rhs_in_place, in_place=True, engine="dual"), (t, x), matrix, True, 1),
        (cs.gradient(lambda x, a: (x * a).sum(), engine="dual"), (x, w), vector, False, 4),
    ]
    for adapter, args, result, in_place, objects in cases:
        adapter(*args)
        prep = adapter.prep.inner
        dydt = np.zeros_like(prep.input_dual)
        if in_place:
            per_evaluation = count(lambda prep=prep, dydt=dydt, bound=adapter.prep.bound: bound(
                dydt, prep.input_dual))
        else:
            per_evaluation = count(lambda prep=prep, bound=adapter.prep.bound: bound(
                prep.input_dual))
        per_call = count(lambda adapter=adapter, args=args: adapter(*args))
        # (the Bound's evaluation, through optree, allocates now and then: a fraction)
        assert round(per_call) == round(prep.evaluations * per_evaluation + result + objects), \
            adapter


# -- the examples stay runnable ---------------------------------------------------------------

@pytest.mark.parametrize("script", ["rosenbrock_minimize.py", "stiff_kinetics.py",
                                    "least_squares_fit.py", "brusselator.py",
                                    "sparse_least_squares.py", "impedance_fit.py",
                                    "spectral_solver_gradient.py", "ode_parameter_fit.py"])
def test_example_runs(script):
    done = subprocess.run([sys.executable, str(EXAMPLES / script), "--quick"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "cyad" in done.stdout and "|" in done.stdout


@pytest.mark.parametrize("engine", [None, "tape", "dual"])
def test_arguments_and_time_that_change_between_calls(engine):
    """An adapter's extra arguments and t are the current call's on every engine: inputs
    of the prep, which a tape records once whatever their values; an int among them
    prepares anew when it changes."""
    def weighted(x, a):
        return np.sum(a * x ** 2)

    x = np.arange(1.0, 4.0)
    gradient = cs.gradient(weighted, engine=engine)
    hessian = cs.hessian(weighted, engine=engine)
    hessp = cs.hessp(weighted, engine=engine)
    for k, a in enumerate((1.0, 3.0, 0.5, np.array([1.0, 2.0, 5.0]), 3.0)):
        assert_allclose(gradient(x, a), 2.0 * a * x, rtol=1e-15)
        assert_allclose(hessian(x, a), np.diag(2.0 * a * np.ones(3)), rtol=1e-15)
        assert_allclose(hessp(x, x, a), 2.0 * a * x, rtol=1e-15)
        # a float a is one input: new values prepare and record nothing anew; an array
        # (of another shape), and a float again, prepare anew
        for adapter in (gradient, hessian, hessp):
            assert adapter.prep.preparations == max(1, k - 1)
            assert adapter.prep.records == (0 if adapter.prep.inner.engine == "dual" else 1)
    powered = cs.gradient(lambda x, a, p: np.sum(a * x ** p), engine=engine)
    for a, p in ((2.0, 2), (3.0, 2), (3.0, 3), (2.0, 2)):
        assert_allclose(powered(x, a, p), a * p * x ** (p - 1), rtol=1e-15)

    def decaying(t, y):
        return np.sin(t) * y ** 2

    for sparse in (False, True):
        jacobian = cs.ode_jacobian(decaying, sparse=sparse, engine=engine)
        for t in (0.5, 1.5, 0.5, 2.5):
            result = jacobian(t, x)
            result = result.toarray() if sparse else result
            assert_allclose(result, np.diag(2.0 * np.sin(t) * x), rtol=1e-15)
        if not sparse:
            assert jacobian.prep.preparations == 1
            assert jacobian.prep.records == (0 if jacobian.prep.inner.engine == "dual" else 1)

"""cyad.scipy's sparse forms and patterns: against JAX's dense derivatives and in SciPy's solvers.

The functions are written once over an array namespace (NumPy or jax.numpy) so that JAX's
jacfwd and hessian give the references; the solvers' runs are compared with runs on cyad's
dense derivatives (tested against references of their own in test_scipy.py).
"""
import functools

import numpy as np
import pytest
from numpy.testing import assert_allclose

pytest.importorskip("scipy")
jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import scipy.sparse  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402
from scipy.optimize import NonlinearConstraint, least_squares, minimize  # noqa: E402

import cyad  # noqa: E402
import cyad.scipy as cs  # noqa: E402

pytestmark = pytest.mark.xdist_group("test_scipy_sparse")

jnp = jax.numpy
TOLERANCE = dict(rtol=1e-12, atol=1e-12)


TRANSFORMS = {"gradient": jax.grad, "jacobian": jax.jacfwd, "hessian": jax.hessian,
              "second": lambda g: jax.jacfwd(jax.jacfwd(g))}


@functools.cache
def jitted(transform, f):
    """JAX's `transform` of f(z, *args, xp=jnp) in z, as one compiled function of (x, *args):
    compiled once for each f, its args traced."""
    return jax.jit(lambda x, *args: TRANSFORMS[transform](lambda z: f(z, *args, xp=jnp))(x))


def jax_jacobian(f, x, *args):
    return np.asarray(jitted("jacobian", f)(jnp.asarray(x), *args))


def jax_hessian(f, x, *args):
    return np.asarray(jitted("hessian", f)(jnp.asarray(x), *args))


# -- functions over an array namespace ------------------------------------------------------

def broyden_banded(x, xp=np):
    """Moré-Garbow-Hillstrom's Broyden banded function: seven nonzeros a row."""
    n = x.shape[0]
    g = x * (1.0 + x)
    padded = xp.concatenate([xp.zeros(5), g, xp.zeros(1)])
    below = sum(padded[5 - k:5 - k + n] for k in range(1, 6))
    return x * (2.0 + 5.0 * x * x) + 1.0 - below - padded[6:]


def scaled_chain(x, a, b, xp=np):
    """Residuals with extra args: a scale array and a number."""
    return a * xp.sin(x[1:] * x[:-1]) + b * x[1:] ** 2


def chain_objective(x, a, xp=np):
    """A scalar objective with a tridiagonal Hessian (and one argument)."""
    return xp.sum(a * (x[1:] - x[:-1] ** 2) ** 2) + xp.sum(xp.cosh(x - 0.5))


def brusselator(t, y, n, xp=np):
    """The periodic 2-D Brusselator (examples/scipy/brusselator.py), forcing from t = 1.1."""
    u = y[:n * n].reshape(n, n)
    v = y[n * n:].reshape(n, n)

    def laplacian(w):
        return (xp.roll(w, 1, axis=0) + xp.roll(w, -1, axis=0) + xp.roll(w, 1, axis=1)
                + xp.roll(w, -1, axis=1) - 4.0 * w)
    uuv = u * u * v
    du = 1.0 + uuv - 4.4 * u + (0.1 * n * n) * laplacian(u) + (5.0 if t >= 1.1 else 0.0)
    dv = 3.4 * u - uuv + (0.1 * n * n) * laplacian(v)
    return xp.concatenate([du.ravel(), dv.ravel()])


def brusselator_pattern(n):
    """The Jacobian's pattern, by hand: each species' 5-point stencil, and u_ij with v_ij."""
    cells = np.arange(n * n).reshape(n, n)
    rows, cols = [cells.ravel(), cells.ravel() + n * n], [cells.ravel() + n * n, cells.ravel()]
    for shift in [(0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)]:
        neighbours = np.roll(cells, shift, axis=(0, 1)).ravel()
        rows += [cells.ravel(), cells.ravel() + n * n]
        cols += [neighbours, neighbours + n * n]
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    return scipy.sparse.csr_array((np.ones(rows.size), (rows, cols)), shape=(2 * n * n,) * 2)


def decay_chain(t, y, k, xp=np):
    """A time-dependent right-hand side whose Jacobian depends on t: bidiagonal."""
    rate = k * (1.0 + xp.sin(t) ** 2)
    return xp.concatenate([-rate * y[:1] ** 2, rate * (y[:-1] ** 2 - y[1:] ** 2)])


def decay_chain_of_y(y, t, k, xp=np):
    """decay_chain with y first (JAX's references: t and k traced arguments)."""
    return decay_chain(t, y, k, xp=xp)


def decay_chain_in_place(dydt, t, y, k):
    dydt[...] = decay_chain(t, y, k)


def same_pattern(a, b):
    a, b = scipy.sparse.csr_array(a != 0), scipy.sparse.csr_array(b != 0)
    return a.shape == b.shape and (a != b).nnz == 0


# -- the callables against JAX ---------------------------------------------------------------

def test_sparse_jacobian_against_jax():
    rng = np.random.default_rng(0)
    jac = cs.jacobian(broyden_banded, sparse=True)
    for _ in range(3):
        x = rng.uniform(-1.5, 1.5, 40)
        J = jac(x)
        assert isinstance(J, scipy.sparse.csr_array) and J.dtype == np.float64
        assert_allclose(J.toarray(), jax_jacobian(broyden_banded, x), **TOLERANCE)
    assert jac.prep.n_colors == 7 and jac.prep.sparsity.nnz == 7 * 40 - 16
    # extra args, a given (too large) pattern, a row coloring
    a, b = rng.uniform(0.5, 2.0, 39), 0.7
    x = rng.uniform(-1.0, 1.0, 40)
    reference = jax_jacobian(scaled_chain, x, a, b)
    for options in [{}, {"coloring": "row"}, {"coloring": "bidirectional"},
                    {"sparsity": np.abs(reference) + np.eye(39, 40, 2) > 0}]:
        J = cs.jacobian(scaled_chain, sparse=True, **options)(x, a, b)
        assert_allclose(J.toarray(), reference, **TOLERANCE)
    # prepared from x0, and inputs of other dtypes are taken in float64
    jac = cs.jacobian(broyden_banded, x0=np.zeros(12), sparse=True)
    assert jac.prep is not None
    x32 = rng.uniform(-1.0, 1.0, 12).astype(np.float32)
    assert_allclose(jac(x32).toarray(), jax_jacobian(broyden_banded, x32.astype(np.float64)),
                    **TOLERANCE)
    assert_allclose(jac(list(map(float, x32))).toarray(), jac(x32).toarray(), rtol=0, atol=0)


def test_sparse_hessian_against_jax():
    rng = np.random.default_rng(1)
    hess = cs.hessian(chain_objective, sparse=True)
    for a in [100.0, 3.0]:
        x = rng.uniform(-1.0, 1.0, 30)
        H = hess(x, a)
        assert isinstance(H, scipy.sparse.csr_array) and H.dtype == np.float64
        assert_allclose(H.toarray(), jax_hessian(chain_objective, x, a), **TOLERANCE)
    assert hess.prep.coloring == "star" and hess.prep.n_colors == 3
    for engine in ["dual", "tape"]:
        x = rng.uniform(-1.0, 1.0, 9)
        H = cs.hessian(lambda z: chain_objective(z, 2.0), sparse=True, engine=engine)(x)
        assert_allclose(H.toarray(), jax_hessian(chain_objective, x, 2.0), **TOLERANCE)
    # a given symmetric pattern that holds the detected one
    x = rng.uniform(-1.0, 1.0, 9)
    wide = np.abs(np.subtract.outer(np.arange(9), np.arange(9))) <= 2
    H = cs.hessian(chain_objective, sparse=True, sparsity=wide)(x, 5.0)
    assert H.nnz == wide.sum()
    assert_allclose(H.toarray(), jax_hessian(chain_objective, x, 5.0), **TOLERANCE)


@pytest.mark.parametrize("in_place", [False, True])
def test_sparse_ode_jacobian_against_jax(in_place):
    rng = np.random.default_rng(2)
    fun = decay_chain_in_place if in_place else decay_chain
    jac = cs.ode_jacobian(fun, in_place=in_place, sparse=True)
    for t in [0.0, 0.4, 2.0]:      # the Jacobian depends on t: t passes through
        y = rng.uniform(0.1, 1.0, 25)
        J = jac(t, y, 1.5)
        assert isinstance(J, scipy.sparse.csc_array) and J.dtype == np.float64
        reference = jax_jacobian(decay_chain_of_y, y, t, 1.5)
        assert_allclose(J.toarray(), reference, **TOLERANCE)
    assert jac.prep.n_colors == 2 and jac.prep.sparsity.nnz == 2 * 25 - 1
    assert "sparse ode_jacobian" in repr(jac)
    # the Brusselator, on both sides of its forcing's start
    n = 5
    y = rng.uniform(0.5, 3.0, 2 * n * n)
    jac = cs.ode_jacobian(lambda t, y: brusselator(t, y, n), sparse=True, y0=y)
    assert jac.prep is not None
    for t in [0.0, 2.0]:
        J = jac(t, y)
        reference = jax_jacobian(lambda z, xp, t=t: brusselator(t, z, n, xp=xp), y)
        assert_allclose(J.toarray(), reference, **TOLERANCE)
    assert same_pattern(jac.prep.sparsity, brusselator_pattern(n))


def test_each_call_returns_a_matrix_of_its_own():
    # SciPy keeps J (BDF for many steps; least_squares scales res.jac's data in place)
    rng = np.random.default_rng(3)
    x1, x2 = rng.uniform(-1.0, 1.0, 20), rng.uniform(-1.0, 1.0, 20)
    for jac, call in [(cs.jacobian(broyden_banded, sparse=True), lambda j, x: j(x)),
                      (cs.ode_jacobian(decay_chain, sparse=True), lambda j, x: j(0.3, x, 2.0)),
                      (cs.hessian(lambda z: chain_objective(z, 4.0), sparse=True),
                       lambda j, x: j(x))]:
        first = call(jac, x1)
        kept = first.toarray()
        second = call(jac, x2)
        assert_allclose(first.toarray(), kept, rtol=0, atol=0)
        assert not np.shares_memory(first.data, second.data)
        assert not np.shares_memory(first.indices, second.indices)
        assert not np.shares_memory(first.indptr, second.indptr)
        # changing one result's structure and values reaches neither the prep nor the next
        first.data[:] = 0.0
        first.eliminate_zeros()
        assert first.nnz == 0
        assert_allclose(call(jac, x2).toarray(), second.toarray(), rtol=0, atol=0)
        assert call(jac, x2).nnz == second.nnz == jac.prep.sparsity.nnz


def test_a_call_allocates_the_prepared_call_and_its_copy(allocations_per_call):
    # per call: the prepared sparse call with out= (what f allocates on its duals, nothing
    # of cyad's own), then the copy returned (data, index arrays, the array object)
    x, w = np.linspace(0.1, 1.2, 12), np.linspace(1.0, 2.0, 11)

    def residuals(x):
        return x[1:] * x[:-1] * w

    def rhs(t, y):
        return y[1:] * y[:-1] * w

    def count(fn):
        return allocations_per_call(fn, short=100, long=300)

    def check(adapter, call, operator, *t):
        result = call()
        prep, out = adapter.prep, adapter.prep.new_result()
        f = prep._f     # the function the prep is bound to (fun, or fun of y before t)
        if t:
            prepared = count(lambda: operator(f, x, t[0], prep=prep, out=out))
        else:
            prepared = count(lambda: operator(f, x, prep=prep, out=out))
        copy = count(lambda: result.copy())
        assert copy > 0
        assert count(call) == pytest.approx(prepared + copy, abs=0.01), adapter

    jac = cs.jacobian(residuals, sparse=True)
    check(jac, lambda: jac(x), cyad.sparse_jacobian)
    hess = cs.hessian(lambda z: np.sum(residuals(z)), sparse=True)
    check(hess, lambda: hess(x), cyad.sparse_hessian)
    ode = cs.ode_jacobian(rhs, sparse=True)
    check(ode, lambda: ode(0.5, x), cyad.sparse_jacobian, 0.5)


def test_the_solvers_conversions_copy_nothing():
    # BDF and Radau convert J by csc_matrix(J, dtype=...); least_squares and trust-constr
    # by csr_array(J): in the format returned, they keep its arrays
    x = np.linspace(0.1, 1.0, 10)
    J = cs.ode_jacobian(decay_chain, sparse=True)(0.0, x, 1.0)
    assert np.shares_memory(scipy.sparse.csc_matrix(J, dtype=np.float64).data, J.data)
    for J in [cs.jacobian(broyden_banded, sparse=True)(x),
              cs.hessian(lambda z: chain_objective(z, 1.0), sparse=True)(x),
              cs.constraint_hessian(broyden_banded, sparse=True)(x, x)]:
        assert np.shares_memory(scipy.sparse.csr_array(J).data, J.data)


# -- patterns for SciPy's finite differences -------------------------------------------------

def test_jac_sparsity_holds_every_nonzero():
    rng = np.random.default_rng(4)
    pattern = cs.jac_sparsity(broyden_banded, np.zeros(30))
    assert isinstance(pattern, scipy.sparse.csr_array) and pattern.shape == (30, 30)
    band = np.subtract.outer(np.arange(30), np.arange(30))
    assert same_pattern(pattern, (band >= -1) & (band <= 5))
    a = rng.uniform(0.5, 2.0, 19)
    pattern = cs.jac_sparsity(scaled_chain, np.ones(20), args=(a, 0.3))
    for _ in range(3):       # every nonzero of the derivative anywhere is in the pattern
        J = jax_jacobian(scaled_chain, rng.uniform(-2.0, 2.0, 20), a, 0.3)
        assert not (J[pattern.toarray() == 0] != 0).any()
    assert pattern.nnz == 2 * 19
    n = 4
    y0 = rng.uniform(0.5, 3.0, 2 * n * n)
    assert same_pattern(cs.ode_jac_sparsity(brusselator, 0.0, y0, (n,)), brusselator_pattern(n))
    in_place = cs.ode_jac_sparsity(decay_chain_in_place, 0.0, np.ones(10), (1.0,),
                                   in_place=True)
    assert same_pattern(in_place, cs.ode_jac_sparsity(decay_chain, 0.0, np.ones(10), (1.0,)))
    assert same_pattern(in_place, np.eye(10) + np.eye(10, k=-1))


def test_c_function_needs_its_sparsity(example):
    # a FunctionWrapper of C functions cannot be recorded: its pattern is given
    f = example.rosenbrock_function()
    x = np.linspace(-1.0, 1.0, 8)
    with pytest.raises(TypeError, match="sparsity"):
        cs.jac_sparsity(f, x)
    with pytest.raises(TypeError, match="sparsity"):
        cs.hessian(f, sparse=True)(x)
    tridiagonal = np.abs(np.subtract.outer(np.arange(8), np.arange(8))) <= 1
    H = cs.hessian(f, sparse=True, sparsity=tridiagonal)(x)
    assert_allclose(H.toarray(), cyad.hessian(f, x), rtol=1e-12, atol=1e-12)


# -- in SciPy's solvers ----------------------------------------------------------------------

@pytest.mark.parametrize("method", ["BDF", "Radau"])
def test_solve_ivp_with_the_sparse_jacobian(method):
    n = 6
    x = np.arange(n) / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    y0 = np.concatenate([(22.0 * Y * (1.0 - Y) ** 1.5).ravel(),
                         (27.0 * X * (1.0 - X) ** 1.5).ravel()])
    options = dict(method=method, args=(n,), rtol=1e-8, atol=1e-8)
    jac = cs.ode_jacobian(brusselator, sparse=True)
    sparse = solve_ivp(brusselator, (0.0, 4.0), y0, jac=jac, **options)
    dense = solve_ivp(brusselator, (0.0, 4.0), y0, jac=cs.ode_jacobian(brusselator), **options)
    fd = solve_ivp(brusselator, (0.0, 4.0), y0, **options,
                   jac_sparsity=cs.ode_jac_sparsity(brusselator, 0.0, y0, (n,)))
    assert sparse.success and dense.success and fd.success and sparse.njev > 0
    # the same Jacobians, factored by other LUs (sparse, dense): the same steps to rounding
    assert abs(sparse.t.size - dense.t.size) <= 0.01 * dense.t.size
    assert_allclose(sparse.y[:, -1], dense.y[:, -1], rtol=1e-6, atol=1e-6)
    assert_allclose(fd.y[:, -1], dense.y[:, -1], rtol=1e-5, atol=1e-5)
    in_place = solve_ivp(cs.ode_function(decay_chain_in_place), (0.0, 3.0), np.ones(30),
                         method=method, args=(50.0,), rtol=1e-8, atol=1e-10,
                         jac=cs.ode_jacobian(decay_chain_in_place, in_place=True, sparse=True))
    reference = solve_ivp(decay_chain, (0.0, 3.0), np.ones(30), method=method, args=(50.0,),
                          rtol=1e-8, atol=1e-10, jac=cs.ode_jacobian(decay_chain))
    assert in_place.success and in_place.njev > 0
    assert_allclose(in_place.y[:, -1], reference.y[:, -1], rtol=1e-9, atol=1e-12)


def test_least_squares_lsmr_with_the_sparse_jacobian():
    x0 = -np.ones(2000)
    jac = cs.jacobian(broyden_banded, sparse=True)
    sparse = least_squares(broyden_banded, x0, jac=jac, tr_solver="lsmr", ftol=1e-12,
                           xtol=1e-12, gtol=1e-12)
    fd = least_squares(broyden_banded, x0, tr_solver="lsmr", ftol=1e-12, xtol=1e-12,
                       gtol=1e-12, jac_sparsity=cs.jac_sparsity(broyden_banded, x0))
    assert sparse.success and sparse.cost < 1e-20 and fd.success
    assert isinstance(sparse.jac, scipy.sparse.csr_array)
    assert_allclose(sparse.x, fd.x, rtol=1e-8, atol=1e-8)
    # a small problem with args, against the dense Jacobian
    rng = np.random.default_rng(5)
    a = rng.uniform(0.5, 1.5, 29)
    target = scaled_chain(rng.uniform(-0.5, 0.5, 30), a, 0.3)

    def residuals(x, a, b):
        return np.concatenate([scaled_chain(x, a, b) - target, 0.1 * x])

    reference = least_squares(residuals, np.zeros(30), args=(a, 0.3), method="trf",
                              jac=cs.jacobian(residuals), ftol=1e-14, xtol=1e-14, gtol=1e-14)
    jac = cs.jacobian(residuals, sparse=True)
    fit = least_squares(residuals, np.zeros(30), args=(a, 0.3), method="trf", jac=jac,
                        tr_solver="lsmr", ftol=1e-14, xtol=1e-14, gtol=1e-14)
    assert_allclose(fit.x, reference.x, rtol=1e-7, atol=1e-7)
    assert_allclose(fit.cost, reference.cost, rtol=1e-9)
    assert_allclose(fit.jac.toarray(), jax_jacobian(
        lambda x, xp: xp.concatenate([scaled_chain(x, a, 0.3, xp=xp), 0.1 * x]), fit.x),
        **TOLERANCE)


def test_trust_constr_with_sparse_hessian_and_constraint_jacobian():
    # min sum (x_(i+1) - x_i^2)^2 + cosh(x - 0.5) subject to x_i^2 + x_(i+1)^2 <= 0.5
    n = 40

    def pairs(x):
        return x[1:] ** 2 + x[:-1] ** 2

    x0 = np.full(n, 0.1)
    gradient = cs.gradient(chain_objective)
    runs = []
    for sparse in [True, False]:
        constraint = NonlinearConstraint(pairs, -np.inf, 0.5,
                                         jac=cs.jacobian(pairs, sparse=sparse))
        runs.append(minimize(chain_objective, x0, args=(10.0,), method="trust-constr",
                             jac=gradient, hess=cs.hessian(chain_objective, sparse=sparse),
                             constraints=[constraint], options={"gtol": 1e-10,
                                                                "xtol": 1e-12}))
    sparse, dense = runs
    assert sparse.success and dense.success
    assert scipy.sparse.issparse(sparse.jac[0])
    assert np.max(pairs(sparse.x)) <= 0.5 + 1e-8 and np.max(pairs(sparse.x)) > 0.49
    assert_allclose(sparse.x, dense.x, rtol=1e-7, atol=1e-7)
    assert_allclose(sparse.fun, dense.fun, rtol=1e-10)


def constraints(x, xp=np):
    """Three kinds of constraint Hessian: diagonal, a product's cross terms, dense blocks."""
    return xp.concatenate([x[1:] ** 2 + x[:-1] ** 2, xp.sin(x[:-2] * x[2:]),
                           xp.reshape(xp.sum(xp.exp(x[:3])), (1,))])


@pytest.mark.parametrize("sparse", [False, True])
def test_constraint_hessian_against_jax(sparse):
    rng = np.random.default_rng(6)
    hess = cs.constraint_hessian(constraints, sparse=sparse)
    for _ in range(3):      # new multipliers every call, as trust-constr passes them
        x, v = rng.uniform(-1.0, 1.0, 12), rng.normal(size=11 + 10 + 1)
        H = hess(x, v)
        H = H.toarray() if sparse else H
        reference = np.einsum("i,ijk->jk", v, np.asarray(
            jitted("second", constraints)(jnp.asarray(x))))
        assert_allclose(H, reference, **TOLERANCE)
    if sparse:
        assert isinstance(hess(x, v), scipy.sparse.csr_array)
        assert hess.prep.sparsity.nnz < 12 * 12
    assert "constraint_hessian" in repr(hess)
    prepared = cs.constraint_hessian(constraints, np.zeros(12), np.zeros(22), sparse=sparse)
    assert prepared.prep is not None
    H = prepared(x, v)
    assert_allclose(H.toarray() if sparse else H, reference, **TOLERANCE)


def test_trust_constr_with_the_constraint_hessian():
    def objective(x, xp=np):
        return xp.sum((x[1:] - x[:-1]) ** 2) + xp.sum(xp.cosh(x - 1.0))

    def pairs(x, xp=np):
        return x[1:] ** 2 + x[:-1] ** 2

    def run(gradient, hessian, jacobian, constraint_hessian):
        constraint = NonlinearConstraint(pairs, -np.inf, 1.0, jac=jacobian,
                                         hess=constraint_hessian)
        return minimize(objective, np.full(60, 0.1), method="trust-constr", jac=gradient,
                        hess=hessian, constraints=[constraint],
                        options={"gtol": 1e-9, "xtol": 1e-12})

    def weighted_pairs(x, v, xp=np):
        return xp.sum(v * pairs(x, xp=xp))

    def jax_lagrangian_hessian(x, v):
        return jax_hessian(weighted_pairs, x, jnp.asarray(v))

    # the same algorithm on JAX's dense derivatives: the same iterations (the solution is
    # weakly determined along the active constraints: rounding moves it by up to a few 1e-5)
    reference = run(lambda x: np.asarray(jitted("gradient", objective)(jnp.asarray(x))),
                    lambda x: jax_hessian(objective, x),
                    lambda x: jax_jacobian(pairs, x), jax_lagrangian_hessian)
    sparse = run(cs.gradient(objective), cs.hessian(objective, sparse=True),
                 cs.jacobian(pairs, sparse=True), cs.constraint_hessian(pairs, sparse=True))
    dense = run(cs.gradient(objective), cs.hessian(objective), cs.jacobian(pairs),
                cs.constraint_hessian(pairs))
    bfgs = run(cs.gradient(objective), cs.hessian(objective, sparse=True),
               cs.jacobian(pairs, sparse=True), None)    # SciPy's default: BFGS
    assert reference.success and sparse.success and dense.success and bfgs.success
    for res in [sparse, dense]:
        assert res.nit == reference.nit
        assert_allclose(res.x, reference.x, rtol=5e-5, atol=5e-5)
        assert res.fun == pytest.approx(reference.fun, rel=1e-7)
    assert np.max(pairs(sparse.x)) == pytest.approx(1.0, abs=1e-5)
    assert sparse.nit < bfgs.nit     # the exact Lagrangian Hessian, against BFGS


# -- bad input -------------------------------------------------------------------------------

def test_errors():
    x = np.linspace(-1.0, 1.0, 10)
    with pytest.raises(TypeError, match="chunk"):
        cs.jacobian(broyden_banded, sparse=True, chunk=2)
    with pytest.raises(TypeError, match="chunk"):
        cs.ode_jacobian(decay_chain, sparse=True, chunk=2)
    with pytest.raises(TypeError, match="sparse=True"):
        cs.jacobian(broyden_banded, sparsity=np.eye(10))
    with pytest.raises(TypeError, match="sparse=True"):
        cs.hessian(chain_objective, sparsity=np.eye(10))
    with pytest.raises(TypeError, match="sparse=True"):
        cs.ode_jacobian(decay_chain, coloring="row")
    with pytest.raises(TypeError, match="callable"):
        cs.jacobian(3.0, sparse=True)
    with pytest.raises(ValueError, match="engine"):
        cs.hessian(chain_objective, sparse=True, engine="nope")
    with pytest.raises(ValueError, match="coloring"):
        cs.jacobian(broyden_banded, sparse=True, coloring="star")(x)
    # a given pattern that misses a nonzero is refused, naming it
    with pytest.raises(ValueError, match=r"misses the entry \(0, 1\)"):
        cs.jacobian(broyden_banded, sparse=True, sparsity=np.eye(10))(x)
    with pytest.raises(ValueError, match="misses"):
        cs.ode_jacobian(decay_chain, sparse=True, sparsity=np.eye(10))(0.0, x, 1.0)
    with pytest.raises(ValueError, match="misses"):
        cs.hessian(chain_objective, sparse=True, sparsity=np.eye(10))(x, 1.0)
    # a later call of another shape; the callable still works
    jac = cs.jacobian(broyden_banded, sparse=True)
    jac(x)
    with pytest.raises(ValueError):
        jac(np.ones(11))
    assert_allclose(jac(x).toarray(), jax_jacobian(broyden_banded, x), **TOLERANCE)
    hess = cs.hessian(chain_objective, sparse=True)
    hess(x, 1.0)
    with pytest.raises(ValueError):
        hess(np.ones(11), 1.0)
    with pytest.raises(TypeError, match="together"):
        cs.constraint_hessian(constraints, x0=x)
    with pytest.raises(TypeError, match="sparse=True"):
        cs.constraint_hessian(constraints, sparsity=np.eye(10))
    hess = cs.constraint_hessian(constraints)
    hess(x, np.ones(18))        # 9 + 8 + 1 constraints
    with pytest.raises(ValueError, match="v has shape"):
        hess(x, np.ones(17))
    # one call at a time
    def reentrant(z):
        inner(z)
        return broyden_banded(z)
    inner = cs.jacobian(reentrant, sparse=True)
    with pytest.raises(RuntimeError, match="in use"):
        inner(x)

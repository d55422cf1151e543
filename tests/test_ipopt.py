"""cyad.ipopt: IPOPT's callbacks against JAX's dense derivatives, and problems solved."""
import functools
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import cyad
import cyad.ipopt

pytestmark = pytest.mark.xdist_group("test_ipopt")

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples" / "ipopt"


# -- problems, written once for NumPy (cyad) and jax.numpy (the reference) ------------------

def hs071_objective(x, xp=np):
    return x[0] * x[3] * xp.sum(x[:3]) + x[2]


def hs071_constraints(x, xp=np):
    return xp.stack([xp.prod(x), xp.sum(x ** 2)])


def chain_objective(x, xp=np):
    """A chain coupling neighbours, and one coupling the two ends."""
    return xp.sum(xp.exp(0.1 * x[:-1] * x[1:])) + xp.sum(x ** 4) + x[0] * x[-1]


def chain_constraints(x, xp=np):
    """Neighbours' products, a sine of a stride-3 difference, as a (2, k) array."""
    k = (x.size - 3) // 2
    return xp.stack([x[:k] * x[1:k + 1] - xp.cos(x[2:k + 2]),
                     xp.sin(x[3:k + 3] - x[:k]) * x[k:2 * k]])


def oscillator(n_intervals):
    """A trapezoidal van der Pol optimal-control problem (as examples/ipopt)."""
    h = 10.0 / n_intervals
    weights = np.full(n_intervals + 1, h)
    weights[[0, -1]] = h / 2.0

    def unpack(w):
        n = w.size // 3
        return w[:n], w[n:2 * n], w[2 * n:]

    def objective(w, xp=np):
        x1, x2, u = unpack(w)
        return xp.sum(weights * (x1 ** 2 + x2 ** 2 + u ** 2))

    def defects(w, xp=np):
        x1, x2, u = unpack(w)
        f1, f2 = (1.0 - x2 ** 2) * x1 - x2 + u, x1
        return xp.concatenate([x1[1:] - x1[:-1] - 0.5 * h * (f1[1:] + f1[:-1]),
                               x2[1:] - x2[:-1] - 0.5 * h * (f2[1:] + f2[:-1])])
    return objective, defects


def random_program(seed, n=24, m=15):
    """f = sum tanh(A x)^2 + sum (B x)^3, c = sin(C x) * (D x) + E x: random sparse A..E."""
    rng = np.random.default_rng(seed)
    A, B, C, D, E = (np.where(rng.random((k, n)) < 0.12, rng.standard_normal((k, n)), 0.0)
                     for k in (n, n, m, m, m))

    def objective(x, xp=np):
        return xp.sum(xp.tanh(A @ x) ** 2) + xp.sum((B @ x) ** 3)

    def constraints(x, xp=np):
        return xp.sin(C @ x) * (D @ x) + E @ x
    return objective, constraints


OSCILLATOR = oscillator(12)
PROBLEMS = {
    "hs071": (hs071_objective, hs071_constraints, 4),
    "chain": (chain_objective, chain_constraints, 17),
    "oscillator": (*OSCILLATOR, 39),
    **{f"random-{seed}": (*random_program(seed), 24) for seed in range(6)},
    "unconstrained": (chain_objective, None, 9),
}


@functools.cache
def jitted_references(objective, constraints):
    """One compiled function of (x, lagrange, obj_factor) -> JAX's dense gradient, Jacobian
    and Lagrangian Hessian at x, for each problem (compiled once, shared by the engines)."""
    f = lambda z: objective(z, jnp)  # noqa: E731

    def derivatives(x, lagrange, obj_factor):
        gradient = jax.grad(f)(x)
        if constraints is None:
            jacobian = jnp.zeros((0, x.size))
            lagrangian = lambda z: obj_factor * f(z)  # noqa: E731
        else:
            c = lambda z: jnp.reshape(constraints(z, jnp), -1)  # noqa: E731
            jacobian = jax.jacfwd(c)(x)
            lagrangian = lambda z: obj_factor * f(z) + jnp.dot(lagrange, c(z))  # noqa: E731
        return gradient, jacobian, jax.hessian(lagrangian)(x)
    return jax.jit(derivatives)


def references(objective, constraints, x, lagrange, obj_factor):
    """JAX's dense gradient, Jacobian and Lagrangian Hessian at x."""
    results = jitted_references(objective, constraints)(
        jnp.asarray(x, jnp.float64), jnp.asarray(lagrange, jnp.float64),
        jnp.asarray(obj_factor, jnp.float64))
    return tuple(np.asarray(a) for a in results)


def assert_sparse_equals_dense(rows, cols, values, dense, rtol=1e-12):
    """values at (rows, cols) equal the dense matrix there, and it is zero elsewhere."""
    rows, cols = np.asarray(rows), np.asarray(cols)
    assert len(set(zip(rows.tolist(), cols.tolist()))) == rows.size   # no duplicates
    scale = max(np.abs(dense).max(initial=0.0), 1.0)
    assert_allclose(values, dense[rows, cols], rtol=rtol, atol=rtol * scale)
    rest = dense.copy()
    rest[rows, cols] = 0.0
    assert np.abs(rest).max(initial=0.0) <= rtol * scale


# -- the callbacks --------------------------------------------------------------------------

@pytest.mark.parametrize("engine", [None, "dual", "tape"])
@pytest.mark.parametrize("name", PROBLEMS)
def test_callbacks_against_jax(name, engine):
    objective, constraints, n = PROBLEMS[name]
    rng = np.random.default_rng(len(name))
    x0 = rng.uniform(0.5, 1.5, n)
    callbacks = cyad.ipopt.Callbacks(objective, x0, constraints=constraints, engine=engine)
    m = callbacks.m
    assert callbacks.n == n
    assert m == (0 if constraints is None else np.size(constraints(x0)))
    rows, cols = callbacks.jacobianstructure()
    hessian_rows, hessian_cols = callbacks.hessianstructure()
    assert np.all(hessian_rows >= hessian_cols)
    # the preps at points other than x0, multipliers anew; IPOPT's restoration phase
    # passes obj_factor = 0
    for obj_factor in (rng.uniform(0.1, 2.0), 0.0, rng.uniform(-2.0, 2.0)):
        x = rng.uniform(-1.5, 1.5, n)
        lagrange = rng.standard_normal(m)
        gradient, jacobian, hessian = references(objective, constraints, x, lagrange,
                                                 obj_factor)
        assert callbacks.objective(x) == pytest.approx(float(objective(x)), rel=1e-15)
        assert_allclose(callbacks.gradient(x), gradient, rtol=1e-12,
                        atol=1e-12 * np.abs(gradient).max())
        constraint_values = callbacks.constraints(x)
        assert constraint_values.shape == (m,)
        if m:
            assert_allclose(constraint_values, np.reshape(constraints(x), -1), rtol=1e-15)
        assert_sparse_equals_dense(rows, cols, callbacks.jacobian(x), jacobian)
        values = callbacks.hessian(x, lagrange, obj_factor)
        assert_sparse_equals_dense(hessian_rows, hessian_cols, values, np.tril(hessian))


@pytest.mark.parametrize("engine", [None, "dual", "tape"])
def test_arguments_of_f_and_c(engine):
    # f(x, data, weights) and c(x, data, weights): data a dict of an array and a float,
    # new values between calls taken without preparing or recording anew (against JAX
    # with the arguments closed over)
    n = 6
    rng = np.random.default_rng(3)

    def objective(x, data, power, xp=np):
        return xp.sum(data["w"] * (x - data["target"]) ** power) + data["s"] * xp.prod(x)

    def constraints(x, data, power, xp=np):
        return xp.stack([xp.sum(x ** 2) - data["s"], x[0] * x[1] * data["w"][2]])

    def data_like(seed):
        r = np.random.default_rng(seed)
        return {"w": r.uniform(0.5, 2.0, n), "target": r.standard_normal(n),
                "s": float(r.uniform(1.0, 3.0))}

    data = data_like(0)
    callbacks = cyad.ipopt.Callbacks(objective, rng.uniform(0.5, 1.5, n), constraints,
                                     args=(data, 4), engine=engine)
    rows, cols = callbacks.jacobianstructure()
    hessian_rows, hessian_cols = callbacks.hessianstructure()
    gradient_prep = callbacks._gradient
    for seed in (1, 2, 3):
        callbacks.args = (data_like(seed), 4)
        x, lagrange, obj_factor = rng.uniform(-1.5, 1.5, n), rng.standard_normal(2), 0.7
        d = {k: jnp.asarray(v) for k, v in callbacks.args[0].items()}
        gradient, jacobian, hessian = references(
            lambda z, xp, d=d: objective(z, d, 4, xp),
            lambda z, xp, d=d: constraints(z, d, 4, xp), x,
            lagrange, obj_factor)
        assert callbacks.objective(x) == pytest.approx(
            float(objective(x, *callbacks.args)), rel=1e-15)
        assert_allclose(callbacks.gradient(x), gradient, rtol=1e-12)
        assert_allclose(callbacks.constraints(x), constraints(x, *callbacks.args), rtol=1e-15)
        assert_sparse_equals_dense(rows, cols, callbacks.jacobian(x), jacobian)
        assert_sparse_equals_dense(hessian_rows, hessian_cols,
                                   callbacks.hessian(x, lagrange, obj_factor), np.tril(hessian))
    assert callbacks._gradient is gradient_prep and gradient_prep.preparations == 1
    if engine == "tape":
        assert gradient_prep.records == 1
    # an int argument changed: the sparse preps were made for it
    callbacks.args = (data, 2)
    with pytest.raises(ValueError, match="static value"):
        callbacks.jacobian(x)


def test_structures_are_the_patterns():
    # the oscillator: 2 N defects on neighbouring nodes; the Hessian's union of f's
    # diagonal and the defects' x1 x2 and x2 x2 pairs at every node
    objective, defects = oscillator(20)
    callbacks = cyad.ipopt.Callbacks(objective, np.ones(63), constraints=defects)
    rows, cols = callbacks.jacobianstructure()
    assert (callbacks.n, callbacks.m) == (63, 40)
    # d1_k: x1_k, x1_k+1, x2_k, x2_k+1, u_k, u_k+1; d2_k: x2_k, x2_k+1, x1_k, x1_k+1
    assert rows.size == 20 * 6 + 20 * 4
    assert callbacks.jacobian_prep.n_colors <= 6
    hessian_rows, hessian_cols = callbacks.hessianstructure()
    pairs = set(zip(hessian_rows.tolist(), hessian_cols.tolist()))
    expected = {(i, i) for i in range(63)} | {(21 + k, k) for k in range(21)}
    assert pairs == expected
    assert callbacks.hessian_colors == 2


def test_a_linear_problem_has_an_empty_hessian():
    callbacks = cyad.ipopt.Callbacks(lambda x: np.sum(3.0 * x), np.ones(5),
                                     constraints=lambda x: x[1:] - x[:-1])
    assert [s.size for s in callbacks.hessianstructure()] == [0, 0]
    assert callbacks.hessian(np.ones(5), np.ones(4), 1.0).shape == (0,)
    assert callbacks.hessian_colors == 0
    assert_allclose(callbacks.gradient(np.zeros(5)), np.full(5, 3.0))


def test_without_hessian():
    callbacks = cyad.ipopt.Callbacks(hs071_objective, np.ones(4),
                                     constraints=hs071_constraints, hessian=False)
    assert [s.size for s in callbacks.hessianstructure()] == [0, 0]
    assert callbacks.hessian_colors == 0
    with pytest.raises(RuntimeError, match="hessian=False"):
        callbacks.hessian(np.ones(4), np.ones(2), 1.0)


def test_float32_and_list_inputs_are_taken_in_float64():
    # IPOPT works in float64: a float32 x0 prepares float64 derivatives
    x0 = np.linspace(0.5, 1.5, 4).astype(np.float32)
    callbacks = cyad.ipopt.Callbacks(hs071_objective, x0, constraints=hs071_constraints)
    x = [1.0, 1.0 + 1e-9, 2.0, 3.0]      # a difference float32 cannot hold
    gradient, jacobian, hessian = references(hs071_objective, hs071_constraints,
                                             np.array(x), np.array([0.5, -1.0]), 2.0)
    result = callbacks.gradient(x)
    assert result.dtype == np.float64
    assert_allclose(result, gradient, rtol=1e-15)
    rows, cols = callbacks.jacobianstructure()
    assert_allclose(callbacks.jacobian(x), jacobian[rows, cols], rtol=1e-15)
    rows, cols = callbacks.hessianstructure()
    assert_allclose(callbacks.hessian(x, [0.5, -1.0], 2.0), hessian[rows, cols], rtol=1e-14)


def test_results_are_new_arrays():
    objective, constraints, n = PROBLEMS["chain"]
    callbacks = cyad.ipopt.Callbacks(objective, np.ones(n), constraints=constraints)
    x = np.linspace(-1.0, 1.0, n)
    first = [callbacks.gradient(x), callbacks.jacobian(x),
             callbacks.hessian(x, np.ones(callbacks.m), 1.0)]
    kept = [a.copy() for a in first]
    callbacks.gradient(2.0 * x)
    callbacks.jacobian(2.0 * x)
    callbacks.hessian(2.0 * x, -np.ones(callbacks.m), 3.0)
    for a, b in zip(first, kept):
        assert_array_equal(a, b)


def test_errors():
    with pytest.raises(TypeError, match="objective must be a callable"):
        cyad.ipopt.Callbacks(3.0, np.ones(2))
    with pytest.raises(TypeError, match="constraints must be a callable"):
        cyad.ipopt.Callbacks(np.sum, np.ones(2), constraints=np.ones(2))
    with pytest.raises(ValueError, match="1-D"):
        cyad.ipopt.Callbacks(np.sum, np.ones((2, 2)))
    with pytest.raises(ValueError):
        cyad.ipopt.Callbacks(lambda x: x ** 2, np.ones(3))      # not scalar-valued
    with pytest.raises(ValueError, match="unknown engine 'symbolic'"):
        cyad.ipopt.Callbacks(np.sum, np.ones(3), engine="symbolic")
    callbacks = cyad.ipopt.Callbacks(hs071_objective, np.ones(4),
                                     constraints=hs071_constraints)
    for call in (callbacks.objective, callbacks.gradient, callbacks.constraints,
                 callbacks.jacobian):
        with pytest.raises(ValueError, match=r"x has shape \(5,\), not \(4,\)"):
            call(np.ones(5))
    with pytest.raises(ValueError, match=r"x has shape \(\), not \(4,\)"):
        callbacks.hessian(1.0, np.ones(2), 1.0)
    with pytest.raises(ValueError, match=r"lagrange has shape \(3,\), not \(2,\)"):
        callbacks.hessian(np.ones(4), np.ones(3), 1.0)
    # the callbacks still answer after the errors
    _, jacobian, hessian = references(hs071_objective, hs071_constraints, np.ones(4),
                                      np.ones(2), 1.0)
    rows, cols = callbacks.jacobianstructure()
    assert_allclose(callbacks.jacobian(np.ones(4)), jacobian[rows, cols], rtol=1e-15)


def test_a_call_from_inside_a_function_is_refused():
    # the dual engine evaluates c at every Jacobian call: c calls the callbacks back
    state = {"callbacks": None}

    def constraints(x):
        if state["callbacks"] is not None:
            state["callbacks"].jacobian(np.ones(3))
        return x[1:] * x[:-1]

    callbacks = cyad.ipopt.Callbacks(np.sum, np.ones(3), constraints=constraints,
                                     engine="dual")
    state["callbacks"] = callbacks
    with pytest.raises(RuntimeError, match="in use by another call"):
        callbacks.jacobian(np.ones(3))
    state["callbacks"] = None
    assert_allclose(callbacks.jacobian(np.array([1.0, 2.0, 3.0])), [2.0, 1.0, 3.0, 2.0])


def slopes(x):
    """d/dt sum(sin(t x)) at t = 1, taken inside: sum(x cos x)."""
    return cyad.derivative(lambda t: np.sum(np.sin(t * x)), 1.0)


def sloped_constraints(x):
    """d/dt of sin(t x[1:]) x[:-1] at t = 1, taken inside: x[1:] x[:-1] cos(x[1:])."""
    return cyad.derivative(lambda t: np.sin(t * x[1:]) * x[:-1], 1.0)


@pytest.mark.parametrize("engine", ["dual", "tape"])
def test_functions_taking_derivatives_inside(engine):
    # nested differentiation: the inner derivatives are recorded, their patterns detected
    x0 = np.linspace(0.1, 1.0, 6)
    callbacks = cyad.ipopt.Callbacks(slopes, x0, constraints=sloped_constraints, engine=engine)
    x = np.linspace(-1.0, 1.5, 6)
    lagrange = np.zeros(5)
    lagrange[2] = 0.5
    a, b = x[2], x[3]    # the Hessian of 0.5 a b cos(b) besides that of sum(x cos x)
    dense = np.diag(-2.0 * np.sin(x) - x * np.cos(x))
    dense[3, 2] += 0.5 * (np.cos(b) - b * np.sin(b))
    dense[3, 3] += 0.5 * a * (-2.0 * np.sin(b) - b * np.cos(b))
    rows, cols = callbacks.hessianstructure()
    assert_sparse_equals_dense(rows, cols, callbacks.hessian(x, lagrange, 1.0), dense)
    assert callbacks.objective(x) == pytest.approx(np.sum(x * np.cos(x)), rel=1e-14)
    assert_allclose(callbacks.gradient(x), np.cos(x) - x * np.sin(x), rtol=1e-13)
    a, b = x[:-1], x[1:]
    dense = np.zeros((5, 6))
    dense[np.arange(5), np.arange(5)] = b * np.cos(b)
    dense[np.arange(5), np.arange(1, 6)] = a * np.cos(b) - a * b * np.sin(b)
    rows, cols = callbacks.jacobianstructure()
    assert_sparse_equals_dense(rows, cols, callbacks.jacobian(x), dense)


def test_a_given_jacobian_pattern_missing_an_entry_raises():
    with pytest.raises(ValueError, match="misses the entry"):
        cyad.ipopt.Callbacks(hs071_objective, np.ones(4), constraints=hs071_constraints,
                             jacobian_sparsity=np.ones((2, 4)) - np.eye(2, 4))


def test_problem_without_cyipopt_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cyipopt", None)     # import cyipopt raises
    with pytest.raises(ImportError, match="optional extra 'ipopt'.*cyipopt-wheels"):
        cyad.ipopt.problem(np.sum, np.ones(2))


# -- solved with IPOPT ----------------------------------------------------------------------

def quiet(nlp):
    nlp.add_option("print_level", 0)
    nlp.add_option("sb", "yes")
    return nlp


@pytest.mark.parametrize("hessian", [True, False])
def test_hs071_solved(hessian):
    # the example of cyipopt's documentation (Hock and Schittkowski, problem 71)
    pytest.importorskip("cyipopt")
    x0 = np.array([1.0, 5.0, 5.0, 1.0])
    nlp = quiet(cyad.ipopt.problem(hs071_objective, x0, constraints=hs071_constraints,
                                   lb=np.ones(4), ub=np.full(4, 5.0), cl=[25.0, 40.0],
                                   cu=[2e19, 40.0], hessian=hessian))
    x, info = nlp.solve(x0)
    assert info["status"] == 0, info["status_msg"]
    assert info["obj_val"] == pytest.approx(17.014017, abs=1e-6)
    assert_allclose(x, [1.0, 4.74299963, 3.82114998, 1.37940829], rtol=1e-6)


def test_sparse_optimal_control_agrees_with_dense_jax():
    cyipopt = pytest.importorskip("cyipopt")
    n_intervals = 30
    objective, defects = oscillator(n_intervals)
    size = n_intervals + 1
    lb = np.concatenate([np.full(size, -0.25), np.full(size, -2e19), np.full(size, -1.0)])
    ub = np.concatenate([np.full(size, 2e19), np.full(size, 2e19), np.full(size, 1.0)])
    lb[0] = ub[0] = 0.0
    lb[size] = ub[size] = 1.0
    w0 = np.concatenate([np.zeros(size), np.ones(size), np.zeros(size)])
    bounds = dict(lb=lb, ub=ub, cl=np.zeros(2 * n_intervals), cu=np.zeros(2 * n_intervals))

    # cyipopt's documented way with JAX: dense derivatives, no structures
    f = lambda w: objective(w, jnp)  # noqa: E731
    c = lambda w: defects(w, jnp)  # noqa: E731
    lagrangian_hessian = jax.jit(jax.hessian(
        lambda w, lagrange, obj_factor: obj_factor * f(w) + jnp.dot(lagrange, c(w))))
    lower = np.tril_indices(w0.size)
    dense = types.SimpleNamespace(
        objective=jax.jit(f), gradient=jax.jit(jax.grad(f)), constraints=jax.jit(c),
        jacobian=jax.jit(jax.jacfwd(c)),
        hessian=lambda w, lagrange, obj_factor: np.asarray(
            lagrangian_hessian(w, lagrange, obj_factor))[lower])

    solutions = []
    for problem_obj in (cyad.ipopt.Callbacks(objective, w0, constraints=defects), dense):
        nlp = quiet(cyipopt.Problem(n=w0.size, m=2 * n_intervals, problem_obj=problem_obj,
                                    **bounds))
        nlp.add_option("tol", 1e-10)
        w, info = nlp.solve(w0)
        assert info["status"] == 0, info["status_msg"]
        solutions.append((w, info["obj_val"]))
    (w, value), (w_dense, value_dense) = solutions
    assert value == pytest.approx(value_dense, rel=1e-9)
    assert_allclose(w, w_dense, atol=1e-6)
    assert np.abs(defects(w)).max() < 1e-8


def test_example_runs():
    pytest.importorskip("cyipopt")
    done = subprocess.run([sys.executable, str(EXAMPLES / "optimal_control.py"), "--quick"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "cyad" in done.stdout and "|" in done.stdout


def test_a_branch_outside_the_structures_raises():
    """The structures hold for the branches taken at x0; another branch with a nonzero
    outside them is refused, in the Jacobian and in the Hessian."""
    def objective(x):
        return np.sum(x ** 4) if x[0] > 0 else np.sum(x * x[::-1])

    def constraints(x):
        return x[:2] ** 2 if x[0] > 0 else x[:2] * x[::-1][:2]

    x0 = np.linspace(0.5, 1.0, 5)
    callbacks = cyad.ipopt.Callbacks(objective, x0, constraints)
    lagrange = np.ones(2)
    callbacks.hessian(x0, lagrange, 1.0)
    callbacks.jacobian(x0)
    with pytest.raises(ValueError, match="another branch"):
        callbacks.jacobian(-x0)
    with pytest.raises(ValueError, match="another branch"):
        callbacks.hessian(-x0, lagrange, 1.0)

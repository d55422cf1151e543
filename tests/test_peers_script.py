"""asv_bench/peers.py times the right computations: its cyad rows give the analytic derivatives.

The problems are built without any peer (as on a machine with none installed), at tiny sizes
(P7: an MLP of 26 parameters, its gradient by complex steps of the loss written out element by
element); the tests of the SciPy rows of P5 and P6 and of the reverse-mode peers load those
peers (and are skipped without them). The engine rows and the targets are tested on made-up
engines and timings.
"""
import dataclasses
import functools
import importlib.util
import math
import pathlib

import numpy as np
import pytest
from numpy.testing import assert_allclose

import cyad

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "asv_bench" / "peers.py"
SIZES = (2, 3, 11)


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("peers_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the derivatives, written out element by element --------------------------------------------

def p1(d):
    return d["dx"]


def p2(d):
    x, v = d["x"], d["dx"]
    return np.array([(np.cos(a) - 2 * a * np.sin(a)) * np.exp(-a * a) * b + 3 * a * a * b
                     for a, b in zip(x, v)])


def p3(d):
    x, A = d["x"], d["A"]
    n = len(x)
    J = np.empty((n, n))
    for i in range(n):
        s = 1 / np.cosh(sum(A[i, k] * x[k] for k in range(n))) ** 2
        for j in range(n):
            J[i, j] = s * A[i, j] + (2 * x[i] if i == j else 0.0)
    return J


def p4(d):
    x = d["x"]
    n = len(x)
    g = np.zeros(n)
    for i in range(n - 1):
        g[i] += -400 * x[i] * (x[i + 1] - x[i] ** 2) - 2 * (1 - x[i])
        g[i + 1] += 200 * (x[i + 1] - x[i] ** 2)
    return g


def p5(d):
    x = d["x"]
    n = len(x)
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        H[i + 1, i + 1] += 200
        H[i, i + 1] = H[i + 1, i] = -400 * x[i]
    return H


def p6(d):
    x, v = d["x"], d["dx"]
    n = len(x)
    Hv = np.zeros(n)
    for i in range(n - 1):
        Hv[i] += (1200 * x[i] ** 2 - 400 * x[i + 1] + 2) * v[i] - 400 * x[i] * v[i + 1]
        Hv[i + 1] += 200 * v[i + 1] - 400 * x[i] * v[i]
    return Hv


MLP_INPUTS, MLP_HIDDEN, MLP_OUTPUTS, MLP_BATCH = 3, 4, 2, 5
MLP_N = MLP_HIDDEN * (MLP_INPUTS + 1 + MLP_OUTPUTS) + MLP_OUTPUTS     # 26 parameters


def mlp_loss_by_elements(x, X, Y):
    """The loss of the MLP with parameters x (W1, b1, W2, b2 one after the other, the matrices
    row by row), written out element by element."""
    (batch, inputs), outputs = X.shape, Y.shape[1]
    hidden = (len(x) - outputs) // (inputs + 1 + outputs)
    b1 = inputs * hidden
    w2 = b1 + hidden
    b2 = w2 + hidden * outputs
    total = 0.0
    for s in range(batch):
        h = [np.tanh(sum(X[s, i] * x[i * hidden + j] for i in range(inputs)) + x[b1 + j])
             for j in range(hidden)]
        for o in range(outputs):
            prediction = sum(h[j] * x[w2 + j * outputs + o] for j in range(hidden)) + x[b2 + o]
            total += (prediction - Y[s, o]) ** 2
    return total / (batch * outputs)


def p7(d):
    """The gradient of the loss by complex steps: each partial derivative exact to rounding."""
    x, step = d["x"], 1e-30
    gradient = np.empty_like(x)
    for k in range(len(x)):
        z = x.astype(complex)
        z[k] += 1j * step
        gradient[k] = mlp_loss_by_elements(z, d["X"], d["Y"]).imag / step
    return gradient


def p8(d):
    """d3/dt3 of Rosenbrock's function along a line: its terms 100 (a + b t + c t**2)**2 have
    the cubic coefficient 200 b c."""
    x, v = d["point"], d["direction"]
    return np.asarray(sum(6 * 200 * (v[i + 1] - 2 * x[i] * v[i]) * -v[i] ** 2
                          for i in range(len(x) - 1)))


def p9(d):
    """The gradient of w . (H(x) @ v), H's entries differentiated one by one."""
    x, v, w = d["x"], d["v"], d["w"]
    g = np.zeros(len(x))
    for i in range(len(x) - 1):
        g[i] += 2400 * x[i] * w[i] * v[i]                   # H[i, i] = 1200 x_i**2 + ...
        g[i + 1] += -400 * w[i] * v[i]                      # ... - 400 x_(i+1)
        g[i] += -400 * (w[i] * v[i + 1] + w[i + 1] * v[i])  # H[i, i+1] = H[i+1, i] = -400 x_i
    return g


def spectral_filter(d):
    """The matrix of u -> irfft(k * rfft(u), n), from the cosines: bins 0 and n/2 once, the
    others with their conjugate mirrors."""
    k = d["k"]
    n = len(d["x"])
    j = np.arange(n)
    delta = j[:, None] - j[None, :]
    M = np.full((n, n), k[0])
    for q in range(1, (n + 1) // 2):
        M += 2 * k[q] * np.cos(2 * np.pi * q * delta / n)
    if n % 2 == 0:
        M += k[n // 2] * np.cos(np.pi * delta)
    return M / n


def spectral_jacobians(d):
    """The Jacobian of each step u -> M u - 0.1 dt u**3, and the final u."""
    M, u, jacobians = spectral_filter(d), d["x"], []
    for _ in range(10):
        jacobians.append(M - 0.3 * 0.01 * np.diag(u**2))
        u = M @ u - 0.1 * 0.01 * u**3
    return jacobians, u


def p10(d):
    jacobians, u = spectral_jacobians(d)
    g = 2 * u
    for J in reversed(jacobians):
        g = J.T @ g
    return g


def p10_jvp(d):
    jacobians, _ = spectral_jacobians(d)
    t = d["dx"]
    for J in jacobians:
        t = J @ t
    return t


def p11(d):
    # f'(z) dz of exp(z) sin(z) + z**2, with exp(z) (sin z + cos z) = sqrt(2) exp(z) sin(z + pi/4)
    z = d["x"]
    return (np.sqrt(2.0) * np.exp(z) * np.sin(z + np.pi / 4) + 2 * z) * d["dx"]


ANALYTIC = {"P1": p1, "P2": p2, "P3": p3, "P4": p4, "P5": p5, "P6": p6, "P7": p7, "P8": p8,
            "P9": p9, "P10": p10, "P11": p11}
# the references of the rows with one of their own (a problem of two derivatives)
ROW_ANALYTIC = {"P10": p10_jvp}
BASELINES = {"copyto", "numpy"}        # hand-written NumPy rows, timed as references


def tiny(script, problem):
    """`problem` at sizes the tests afford (P7: an MLP of MLP_N parameters)."""
    if problem.key != "P7":
        return dataclasses.replace(problem, sizes=SIZES)
    return dataclasses.replace(problem, sizes=(MLP_N,), data=functools.partial(
        script.mlp_data, batch=MLP_BATCH, inputs=MLP_INPUTS, outputs=MLP_OUTPUTS))


@pytest.mark.parametrize("key", ["P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10",
                                 "P11"])
def test_cyad_rows_compute_the_derivatives(script, example, key):
    problem = tiny(script, script.PROBLEMS[key](script.NO_PEERS, example))
    timed = [row for row in problem.rows if row.key.startswith("cyad") or row.key in BASELINES]
    for row in problem.rows:
        if row not in timed:
            assert row.build is None and row.note.endswith("not installed"), row.label
    assert script.cyad_key("cyad") in {row.key for row in timed if row.build is not None}
    for n in problem.sizes:
        d = problem.data(n)
        expected = ANALYTIC[key](d)
        assert_allclose(problem.exact(d), expected, rtol=1e-12, atol=1e-12)
        for row in timed:
            if row.build is None:
                continue
            wanted = expected
            if row.exact is not None:
                wanted = ROW_ANALYTIC[key](d)
                assert_allclose(row.exact(d), wanted, rtol=1e-12, atol=1e-12)
            bench = row.build(d)
            for _ in range(3):                 # the prepared call gives the same on every reuse
                bench.call()
                assert_allclose(bench.result(), wanted, rtol=1e-12, atol=1e-12,
                                err_msg=f"{key} {row.label} n={n}")


def test_every_problem_times_cyad(script, example):
    assert set(script.PROBLEMS) == set(ANALYTIC)
    for key, make in script.PROBLEMS.items():
        rows = make(script.NO_PEERS, example).rows
        assert rows[0].key == script.cyad_key("cyad") == "cyad:dual"
        assert rows[0].build is not None, key
        engines = [row.key for row in rows[:len(script.CYAD_ENGINES)]]
        assert engines == [f"cyad:{engine}" for engine in script.CYAD_ENGINES]
    c_level = [row for key in ("P1", "P4")
               for row in script.PROBLEMS[key](script.NO_PEERS, example).rows
               if row.key.startswith("cyad-C") and row.key.endswith(":dual")]
    assert len(c_level) == 3 and all(row.build is not None for row in c_level)


def test_the_mlp_layout(script):
    """Parameters lie W1, b1, W2, b2, matrices row by row; a count that makes no MLP is refused."""
    assert script.MLP_PARAMETERS == 5256
    assert script.mlp_shapes(script.MLP_PARAMETERS, 32, 8) == ((32, 128), (128,), (128, 8), (8,))
    assert script.mlp_shapes(MLP_N, MLP_INPUTS, MLP_OUTPUTS) == ((3, 4), (4,), (4, 2), (2,))
    with pytest.raises(ValueError, match="make no MLP"):
        script.mlp_shapes(MLP_N + 1, MLP_INPUTS, MLP_OUTPUTS)
    d = script.mlp_data(MLP_N, batch=MLP_BATCH, inputs=MLP_INPUTS, outputs=MLP_OUTPUTS)
    assert d["x"].shape == (MLP_N,) and d["X"].shape == (5, 3) and d["Y"].shape == (5, 2)
    loss = script.mlp_loss(np, **d)
    assert math.isclose(loss, mlp_loss_by_elements(d["x"], d["X"], d["Y"]), rel_tol=1e-13)


@pytest.mark.parametrize("key", ["P5", "P6"])
def test_second_order_c_rows_run_or_name_the_missing_function(script, example, key):
    """The C-level row is timed when the example's Rosenbrock has a second-order function, and
    skipped with cyad's own reason only when it really has none."""
    row = next(row for row in script.PROBLEMS[key](script.NO_PEERS, example).rows
               if row.key == script.cyad_key("cyad-C"))
    try:
        cyad.prepare_hessian(example.rosenbrock_function(), np.zeros(3))
    except TypeError as error:
        assert "second-order" in str(error)
        assert row.build is None and "second-order" in row.note and row.note.startswith("skipped")
    else:
        assert row.build is not None          # and test_cyad_rows_compute_the_derivatives runs it


def test_missing_second_order_names_it(script):
    from cyad._reporting import profile as _profile
    assert "second-order" in script.missing_second_order(_profile.copy_function())


@pytest.mark.parametrize("key", ["P5", "P6"])
def test_scipy_rows_difference_the_exact_gradient(script, example, key):
    peers = dict(script.NO_PEERS, scipy=pytest.importorskip("scipy.optimize") and script._scipy())
    problem = script.PROBLEMS[key](peers, example)
    rows = [row for row in problem.rows if row.key in ("fd2", "fd3")]
    assert len(rows) == 2
    for n in SIZES:
        d = problem.data(n)
        expected = ANALYTIC[key](d)
        for row in rows:
            bench = row.build(d)
            assert script.check(row, bench.result(), expected) is None, (key, row.label, n)


TIMING = {"budget": 1e-3, "repeats": 1, "min_repeats": 1}


def test_a_wrong_result_is_reported_not_timed(script, example):
    problem = script.PROBLEMS["P2"](script.NO_PEERS, example)
    wrong = script.Row("wrong", "doubled", lambda d: script.Bench(lambda: None, lambda: 2 * p2(d)))
    d = problem.data(5)
    cell = script.run_cell(wrong, d, problem.exact(d), 5, TIMING, cap=60.0)
    assert isinstance(cell, str) and cell.startswith("wrong result")


def test_a_call_slower_than_the_cap_is_not_checked_nor_timed(script):
    calls = []
    slow = script.Row("slow", "slow", lambda d: script.Bench(lambda: calls.append(1),
                                                               lambda: 1 / 0, first=2.0))
    cell = script.run_cell(slow, {}, None, 5, TIMING, cap=1.0)
    assert cell == script.TooSlow(2.0, 1.0) and str(cell) == "too slow (2 s)"
    assert calls == []                   # the build's first call was the only one


def test_an_engine_cyad_does_not_know_is_not_available(script, monkeypatch):
    monkeypatch.setattr(script, "CYAD_ENGINES", ["dual", "no-such-engine"])
    assert script.engine_missing("dual") is None
    assert script.engine_missing("no-such-engine") == "not available"
    rows = script.PROBLEMS["P4"](script.NO_PEERS, "not built").rows
    by_key = {row.key: row for row in rows}
    dual, unknown = by_key["cyad:dual"], by_key["cyad:no-such-engine"]
    assert dual.build is not None and dual.ref == "cyad:dual"
    assert unknown.build is None and unknown.note == "not available"
    assert unknown.label.endswith("[no-such-engine]") and unknown.ref == "cyad:dual"
    assert by_key["cyad-C:no-such-engine"].note == "skipped: not built"


def test_targets_take_the_best_engine(script, monkeypatch):
    monkeypatch.setattr(script, "CYAD_ENGINES", ["dual", "fast", "slow", "absent"])
    monkeypatch.setattr(script, "TARGETS", [script.Target("P9", (10, 20), "cyad", "jax", 2.0, "")])
    T = script.Timing
    cells = {"jax": {10: T(6.0, 4.0), 20: "jax: not installed"},
             "cyad:dual": {10: T(2.0, 2.0), 20: T(1.0, 1.0)},
             "cyad:fast": {10: T(1.0, 1.0), 20: T(1.0, 1.0)},
             "cyad:slow": {10: script.TooSlow(12.0, 5.0), 20: T(1.0, 1.0)},
             "cyad:absent": {10: "not available", 20: "not available"}}
    (target, n, best, ratios, verdict), (*_, verdict20) = script.evaluate_targets({"P9": cells})
    assert (n, best.engine, best.median, best.minimum, verdict) == (10, "fast", 6.0, 4.0, "PASS")
    by_engine = {r.engine: r for r in ratios}
    assert (by_engine["dual"].median, by_engine["dual"].minimum) == (3.0, 2.0)
    assert by_engine["slow"].median == 0.5 and "first call" in by_engine["slow"].note
    assert by_engine["absent"].median is None and by_engine["absent"].note == "not available"
    assert verdict20 == "N/A (jax: not installed)"
    # a MISS when even the best engine falls short
    cells["cyad:fast"][10] = cells["cyad:dual"][10] = T(4.0, 4.0)
    assert script.evaluate_targets({"P9": cells})[0][-1] == "MISS"


def test_tables_and_targets_without_peers(script, example, capsys):
    timing = {"budget": 1e-3, "repeats": 2, "min_repeats": 1}
    results = {}
    for key, make in script.PROBLEMS.items():
        problem = make(script.NO_PEERS, example)
        problem = tiny(script, problem) if key == "P7" else dataclasses.replace(problem, sizes=(4,))
        results[key] = script.run_problem(problem, timing, cap=60.0)
        script.print_table(problem, results[key])
        n = problem.sizes[0]
        assert isinstance(results[key]["cyad:dual"][n], script.Timing), key
    out = capsys.readouterr().out
    assert "jax: not installed" in out and "numdifftools: not installed" in out
    evaluated = script.evaluate_targets(results)           # no target is at these sizes
    assert len(evaluated) == sum(len(t.sizes) for t in script.TARGETS)
    assert all(verdict == "N/A (size not run)" for *_, verdict in evaluated)
    script.print_targets(evaluated)
    assert "targets" in capsys.readouterr().out


def test_a_failed_example_build_skips_the_c_level_rows(script, tmp_path, monkeypatch):
    broken = tmp_path / "root" / "examples" / "cython"
    broken.mkdir(parents=True)
    (broken / "meson.build").write_text("project('broken', 'c')\nerror('no build here')\n")
    monkeypatch.setattr(script, "ROOT", tmp_path / "root")
    (tmp_path / "build").mkdir()
    example, why = script.build_example(tmp_path / "build")
    assert example is None and why.startswith("meson setup failed")
    rows = script.PROBLEMS["P4"](script.NO_PEERS, why).rows
    c_level = next(row for row in rows if row.key == script.cyad_key("cyad-C"))
    assert c_level.build is None and c_level.note == f"skipped: {why}"


def installed_peers(script, names):
    """The script's peers among `names` that import here; the test is skipped when none does."""
    peers = dict(script.NO_PEERS)
    for name in names:
        try:
            peers[name] = script.PEER_LOADERS[name]()
        except ImportError:
            pass
    if not any(peers[name] for name in names):
        pytest.skip(f"none of {names} is installed")
    return peers


@pytest.mark.parametrize("key", ["P4", "P7"])
def test_reverse_mode_peer_rows_compute_the_gradient(script, example, key):
    """jax.grad, torch.func.grad and CasADi's reverse mode (its Function and buffer calls, on
    CasADi's own MLP for P7) give the gradient; every row of an installed peer is built."""
    peers = installed_peers(script, ("jax", "torch", "casadi"))
    problem = tiny(script, script.PROBLEMS[key](peers, example))
    rows = [row for row in problem.rows if row.key.endswith("-grad")]
    assert {row.key for row in rows} == {"jax-grad", "torch-grad", "casadi-grad",
                                         "casadi-buffer-grad"}
    built = [row for row in rows if row.build is not None]
    assert {row.key.split("-")[0] for row in built} == {name for name in ("jax", "torch", "casadi")
                                                        if peers[name]}
    for n in problem.sizes:
        d = problem.data(n)
        expected = ANALYTIC[key](d)
        for row in built:
            assert_allclose(row.build(d).result(), expected, rtol=1e-10, atol=1e-13,
                            err_msg=f"{key} {row.label} n={n}")

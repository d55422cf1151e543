"""asv_bench/peers.py times the right computations: its cyad rows give the analytic derivatives.

The problems are built without any peer (as on a machine with none installed), at tiny sizes;
only the test of the SciPy rows of P5 and P6 loads SciPy (and is skipped without it).
"""
import dataclasses
import importlib.util
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


ANALYTIC = {"P1": p1, "P2": p2, "P3": p3, "P4": p4, "P5": p5, "P6": p6}
BASELINES = {"copyto", "numpy"}        # hand-written NumPy rows, timed as references


@pytest.mark.parametrize("key", ["P1", "P2", "P3", "P4", "P5", "P6"])
def test_cyad_rows_compute_the_derivatives(script, example, key):
    problem = script.PROBLEMS[key](script.NO_PEERS, example)
    timed = [row for row in problem.rows if row.key.startswith("cyad") or row.key in BASELINES]
    for row in problem.rows:
        if row not in timed:
            assert row.build is None and row.note.endswith("not installed"), row.label
    for n in SIZES:
        d = problem.data(n)
        expected = ANALYTIC[key](d)
        assert_allclose(problem.exact(d), expected, rtol=1e-12, atol=1e-12)
        for row in timed:
            if row.build is None:
                continue
            bench = row.build(d)
            for _ in range(3):                 # the prepared call gives the same on every reuse
                bench.call()
                assert_allclose(bench.result(), expected, rtol=1e-12, atol=1e-12,
                                err_msg=f"{key} {row.label} n={n}")


def test_every_problem_times_cyad(script, example):
    assert set(script.PROBLEMS) == set(ANALYTIC)
    for key, make in script.PROBLEMS.items():
        rows = make(script.NO_PEERS, example).rows
        assert rows[0].key == "cyad"
        assert rows[0].build is not None, key
    c_level = [row for key in ("P1", "P4")
               for row in script.PROBLEMS[key](script.NO_PEERS, example).rows
               if row.key.startswith("cyad-C")]
    assert len(c_level) == 3 and all(row.build is not None for row in c_level)


@pytest.mark.parametrize("key", ["P5", "P6"])
def test_second_order_c_rows_run_or_name_the_missing_function(script, example, key):
    """The C-level row is timed when the example's Rosenbrock has a second-order function, and
    skipped with cyad's own reason only when it really has none."""
    row = next(row for row in script.PROBLEMS[key](script.NO_PEERS, example).rows
               if row.key == "cyad-C")
    try:
        cyad.prepare_hessian(example.rosenbrock_function(), np.zeros(3))
    except TypeError as error:
        assert "second-order" in str(error)
        assert row.build is None and "second-order" in row.note and row.note.startswith("skipped")
    else:
        assert row.build is not None          # and test_cyad_rows_compute_the_derivatives runs it


def test_missing_second_order_names_it(script):
    from cyad import _profile
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


def test_a_wrong_result_is_reported_not_timed(script, example):
    problem = script.PROBLEMS["P2"](script.NO_PEERS, example)
    wrong = script.Row("wrong", "doubled", lambda d: script.Bench(lambda: None, lambda: 2 * p2(d)))
    cell = script.run_cell(problem, wrong, problem.data(5), 5, {"budget": 1e-3, "repeats": 1,
                                                                 "min_repeats": 1})
    assert isinstance(cell, str) and cell.startswith("wrong result")


def test_tables_and_targets_without_peers(script, example, capsys):
    timing = {"budget": 1e-3, "repeats": 2, "min_repeats": 1}
    results = {}
    for key, make in script.PROBLEMS.items():
        problem = dataclasses.replace(make(script.NO_PEERS, example), sizes=(4,))
        results[key] = script.run_problem(problem, timing)
        script.print_table(problem, results[key])
        assert isinstance(results[key]["cyad"][4], script.Timing), key
    out = capsys.readouterr().out
    assert "jax: not installed" in out and "numdifftools: not installed" in out
    evaluated = script.evaluate_targets(results)           # no target is at n = 4
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
    c_level = next(row for row in rows if row.key == "cyad-C")
    assert c_level.build is None and c_level.note == f"skipped: {why}"

"""cyad.profile, the allocation counter, and python -m cyad."""
import json
import sys

import numpy as np
import pytest

import cyad
from cyad.__main__ import main


def copy(y, x):
    y[...] = x


@pytest.mark.parametrize("make, expected", [
    (lambda: (lambda: None), 0),
    (lambda: (lambda: [1, 2, 3]), 1),             # a list object
    (lambda: (lambda x=np.ones(4): np.sin(x)), 2),  # noqa: B008 (an array object and its data)
])
def test_allocation_counter_counts_requests(make, expected):
    assert cyad.allocations_per_call(make()) == expected


def test_another_threads_allocations_do_not_count():
    # a thread allocating all along, which runs while the function counted sleeps
    # (counted, it read about 10^5 requests per call)
    import threading
    import time

    stop = threading.Event()

    def allocating():
        while not stop.is_set():
            [object() for _ in range(100)]

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)   # (the sleeping thread gets the GIL back soon)
    thread = threading.Thread(target=allocating)
    thread.start()
    try:
        counted = [cyad.allocations_per_call(lambda: time.sleep(0), calls=200) for _ in range(3)]
        own = cyad.allocations_per_call(lambda: [time.sleep(0), 1, 2], calls=200)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)
    # (the sleeping thread's own once-off requests may leave a trace of a few in 200 calls)
    assert max(counted) < 0.05
    assert own == pytest.approx(1.0, abs=0.05)   # the list's items (its object: a free list)


def test_allocation_counter_against_memray(allocations_per_call):
    # memray sees the allocations that reach malloc; the counter also sees the requests
    # NumPy's small-buffer cache serves, so it reads at least as much, and both read 0
    # for a clean prepared call
    x = np.linspace(0.1, 1.0, 10)
    prep = cyad.prepare_jacobian(lambda x: x * x + 1.0, x, engine="dual")
    out = np.zeros((10, 10))

    def allocating():
        cyad.jacobian(lambda x: x * x + 1.0, x, prep=prep, out=out)

    assert cyad.allocations_per_call(allocating) >= allocations_per_call(allocating) > 0
    y, clean_prep = np.zeros(10), cyad.prepare_jacobian(copy, x, y=np.zeros(10))

    def clean():
        cyad.jacobian(copy, x, y=y, prep=clean_prep, out=out)

    assert cyad.allocations_per_call(clean) == allocations_per_call(clean) == 0


@pytest.mark.parametrize("operator", ["pushforward", "value_and_pushforward"])
def test_profile_of_the_classic_copy(operator):
    n = 10
    x, dx, y = np.arange(n, dtype=float), np.ones(n), np.zeros(n)
    p = cyad.profile(operator, copy, x, dx, y=y, seconds=0.02, engine="dual")
    assert p.allocations == 0
    assert (p.evaluations, p.chunk, p.width, p.path) == (1, 1, 1, "python")
    p = cyad.profile(operator, copy, x, dx, y=y, seconds=0.02)    # (the tape, by default)
    assert p.allocations == 0
    assert (p.evaluations, p.chunk, p.path) == (0, 1, "replay")
    assert p.samples >= 3 and 0 < p.min <= p.median <= p.max
    assert p.min <= p.mean <= p.max
    assert "0 allocations per call" in str(p)


@pytest.mark.parametrize("engine, evaluations, path", [("dual", 2, "python"),
                                                        ("tape", 0, "replay")])
@pytest.mark.parametrize("operator", ["pullback", "value_and_pullback"])
def test_profile_of_a_pullback(operator, engine, evaluations, path):
    # dual: forward mode over x's basis, 4 directions per evaluation; tape: one sweep, which
    # evaluates f no time
    x, dy, y = np.arange(8.0), np.linspace(-1.0, 1.0, 8), np.zeros(8)
    p = cyad.profile(operator, copy, x, dy, y=y, chunk=4, seconds=0.02, engine=engine)
    assert p.allocations == 0
    assert (p.evaluations, p.path) == (evaluations, path)
    if engine == "tape":
        assert p.work == ("1 cotangents in chunks of 1: 1 reverse sweep(s) per call, "
                          "f not evaluated")
        assert "the tape replayed: 1 cotangents" in str(p) and "f evaluated" not in str(p)
    with pytest.raises(ValueError, match="a pullback needs dx"):
        cyad.profile(operator, copy, x, y=y)


def test_profile_counts_every_evaluation_of_an_allocating_function():
    x = np.linspace(0.1, 1.0, 12)

    def f(x):
        return np.sin(x) * x

    p = cyad.profile("jacobian", f, x, chunk=5, seconds=0.02, engine="dual")
    assert (p.evaluations, p.chunk, p.width) == (3, 5, 8)
    prep = cyad.prepare_jacobian(f, x, chunk=5, engine="dual")
    one_evaluation = cyad.allocations_per_call(lambda: f(prep.input_dual))
    assert p.allocations == pytest.approx(3 * one_evaluation, abs=0.01)


def test_profile_of_a_c_function():
    from cyad._reporting import profile as _profile

    x, dx, y = np.arange(5.0), np.ones(5), np.zeros(5)
    p = cyad.profile("value_and_pushforward", _profile.copy_function(), x, dx, y=y, seconds=0.02)
    assert p.path == "c" and p.allocations == 0


def test_profile_rejects_an_unknown_operator():
    with pytest.raises(ValueError, match="no operator 'hessian'"):
        cyad.profile("hessian", np.sin, np.ones(3))


def test_main_job_prints_the_table(capsys):
    main(["--seconds", "0.01", "--n", "10", "--operators", "pushforward"])
    text = capsys.readouterr().out
    assert "pushforward of f(y, x): y[...] = x, n = 10" in text
    for row in ("Python callable", "C function", "nogil Cython loop"):
        line = next(line for line in text.splitlines() if line.strip().startswith(row))
        assert " 0 |" in line  # no allocation per call
    assert "through its FunctionWrapper" in text


def test_main_job_json(capsys):
    main(["--seconds", "0.01", "--n", "10", "--json"])
    report = json.loads(capsys.readouterr().out)
    rows = [row for table in report["tables"] for row in table["rows"]]
    assert len(rows) == 6
    assert all(row["cyad"]["allocations"] == 0 for row in rows)
    assert all(row["ratio"] > 0 for row in rows)


def test_profile_command_on_a_users_function(tmp_path, monkeypatch, capsys):
    (tmp_path / "user_model.py").write_text(
        "import numpy as np\n"
        "def rhs(y, x):\n"
        "    y[...] = np.sin(x) * x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    main(["profile", "user_model:rhs", "--n", "20", "--seconds", "0.02", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["label"] == "jacobian of user_model:rhs, n = 20"
    # a prepared Jacobian's default: the tape's forward lanes, which do not evaluate f
    assert report["evaluations"] == 0 and report["path"] == "replay"
    assert report["allocations"] == 0


def test_profile_command_pulls_back_ones(tmp_path, monkeypatch, capsys):
    (tmp_path / "user_pullback.py").write_text(
        "import numpy as np\n"
        "def f(x):\n"
        "    return np.sin(x[:3]) * x[1:4]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    main(["profile", "user_pullback:f", "--n", "6", "--operator", "pullback", "--seconds",
          "0.02", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["label"] == "pullback of user_pullback:f, n = 6"
    # a prepared pullback's default: the tape's reverse sweep, which does not evaluate f
    assert (report["evaluations"], report["path"]) == (0, "replay")
    assert report["work"].startswith("1 cotangents in chunks of 1: 1 reverse sweep(s)")


def test_profile_takes_the_operator_itself():
    x = np.linspace(0.1, 1.0, 6)
    p = cyad.profile(cyad.jacobian, np.sin, x, seconds=0.01)
    assert p.label == "jacobian of sin" and p.path == "replay"
    with pytest.raises(ValueError, match="is not one of cyad's operators"):
        cyad.profile(np.sin, np.sin, x)

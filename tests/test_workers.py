"""workers=k: a call in k parts at once, each a share of the chunks of directions on a prep
of its own, on cyad's threads. Every result is, bit for bit, the serial one (and the
analytic one); f's value and y come from part 0; a part's failure reaches the caller and
leaves the prep usable; Ctrl-C stops the parts."""
import ctypes
import os
import signal
import threading
import time

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from reference_functions import (
    PYTHON,
    C,
    F_jacobian,
    F_value,
    N,
    g_gradient,
    g_hessian,
    g_value,
)

import cyad

X = np.linspace(0.3, 1.4, N)
V = (np.linspace(1.0, -0.5, N), np.linspace(-0.2, 0.7, N), np.cos(np.arange(N)),
     np.ones(N), np.arange(N) / N)

# f's kinds, each with the engine its parts run on: a C function (ctypes, holding the
# GIL in its callbacks: parts take turns, the results are those of parallel parts), a
# recorded function (nogil), a Python f on the tape
KINDS = {
    "c": (C, "dual"),
    "recorded": (None, "dual"),
    "tape": (PYTHON, "tape"),
}

# family: (prepare, operator, the function's name, the extra argument, analytic result)
FAMILIES = {
    "jacobian": (cyad.prepare_jacobian, cyad.jacobian, "F", None, F_jacobian),
    "hessian": (cyad.prepare_hessian, cyad.hessian, "g", None, g_hessian),
    "pushforward": (cyad.prepare_pushforward, cyad.pushforward, "F", V,
                    lambda x: tuple(F_jacobian(x) @ v for v in V)),
    "pullback": (cyad.prepare_pullback, cyad.pullback, "F", V,
                 lambda x: tuple(v @ F_jacobian(x) for v in V)),
    "hvp": (cyad.prepare_hvp, cyad.hvp, "g", V, lambda x: tuple(g_hessian(x) @ v for v in V)),
    "gradient": (cyad.prepare_gradient, cyad.gradient, "g", None, g_gradient),
}


def function(kind, name, dtype=np.float64):
    functions, _ = KINDS[kind]
    if functions is None:
        return cyad.record(getattr(PYTHON, name), X.astype(dtype))
    return getattr(functions, name)


def call(family, f, x, engine, workers, chunk, **options):
    prepare, operator, _, extra, _ = FAMILIES[family]
    args = () if extra is None else (tuple(v.astype(x.dtype) for v in extra),)
    prep = prepare(f, x, *args, engine=engine, chunk=chunk, workers=workers, **options)
    first = operator(f, x, *args, prep=prep, **options)
    return prep, operator(f, x * 0.9, *args, prep=prep, **options), first


def as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("workers", [2, 3, 8])
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_parts_give_the_serial_result(family, kind, workers, dtype):
    _, _, name, _, analytic = FAMILIES[family]
    engine = KINDS[kind][1]
    if family == "gradient" and engine == "tape":
        pytest.skip("a tape's gradient is one reverse sweep: it runs whole")
    x = X.astype(dtype)
    f = function(kind, name, dtype)
    _, serial, serial_first = call(family, f, x, engine, 1, 1)
    prep, parallel, parallel_first = call(family, f, x, engine, workers, 1)
    assert prep.workers == workers
    for a, b in zip(as_tuple(parallel) + as_tuple(parallel_first),
                    as_tuple(serial) + as_tuple(serial_first)):
        assert_array_equal(a, b)
    rtol = 1e-12 if dtype == np.float64 else 2e-5
    for a, b in zip(as_tuple(parallel), as_tuple(analytic(x.astype(np.float64) * 0.9))):
        assert_allclose(a, b, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_value_and_y_come_from_part_zero(kind):
    # f(y, x): y += F(x) reads y's incoming values in every part
    engine = KINDS[kind][1]
    functions = KINDS[kind][0] or PYTHON
    f = functions.F_in_place
    if kind == "recorded":
        f = cyad.record(PYTHON.F_in_place, X, y=np.zeros(N))
    y0 = np.linspace(-1.0, 1.0, N)
    results = {}
    for workers in (1, 3):
        y = y0.copy()
        prep = cyad.prepare_jacobian(f, X, y=y, engine=engine, chunk=1, workers=workers)
        value, jacobian = np.empty(N), np.empty((N, N))
        y = y0.copy()
        cyad.value_and_jacobian(f, X, y=y, prep=prep, out=(value, jacobian))
        results[workers] = (value, jacobian, y)
    for a, b in zip(results[3], results[1]):
        assert_array_equal(a, b)
    value, jacobian, y = results[3]
    assert_allclose(value, y0 + F_value(X), rtol=1e-13)
    assert_allclose(y, y0 + F_value(X), rtol=1e-13)
    assert_allclose(jacobian, F_jacobian(X), rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("engine", ["dual", "tape"])
def test_value_gradient_and_hessian_in_parts(engine):
    f = C.g if engine == "dual" else PYTHON.g
    prep = cyad.prepare_hessian(f, X, engine=engine, chunk=1, workers=4)
    value, gradient, hessian = cyad.value_gradient_and_hessian(f, X, prep=prep)
    assert_allclose(value, g_value(X), rtol=1e-13)
    assert_allclose(gradient, g_gradient(X), rtol=1e-13)
    assert_allclose(hessian, g_hessian(X), rtol=1e-13, atol=1e-13)
    serial = cyad.value_gradient_and_hessian(f, X, engine=engine, chunk=1)
    for a, b in zip((value, gradient, hessian), serial):
        assert_array_equal(a, b)


def test_a_python_f_on_the_dual_engine_runs_serially():
    with pytest.warns(cyad.CyadWarning, match="workers=3 runs this jacobian serially"):
        prep = cyad.prepare_jacobian(PYTHON.F, X, chunk=1, engine="dual", workers=3)
    assert prep.engine == "dual" and prep.workers == 3
    assert "parts" not in repr(prep)
    assert repr(cyad.prepare_jacobian(C.F, X, chunk=1, workers=3)).endswith(
        "6 evaluation(s) of f per call, in 3 parts at once>")
    assert_array_equal(cyad.jacobian(PYTHON.F, X, prep=prep),
                       cyad.jacobian(PYTHON.F, X, chunk=1))


def test_an_operator_without_prep_takes_workers():
    f = cyad.record(PYTHON.F, X)
    assert_array_equal(cyad.jacobian(f, X, workers=2, chunk=2), cyad.jacobian(f, X, chunk=2))


def test_workers_are_checked():
    prep = cyad.prepare_jacobian(C.F, X, workers=2)
    with pytest.raises(ValueError, match="differs from the prep's workers 2"):
        cyad.jacobian(C.F, X, prep=prep, workers=3)
    assert_allclose(cyad.jacobian(C.F, X, prep=prep, workers=2), F_jacobian(X), rtol=1e-13)
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(ValueError, match="positive int"):
            cyad.prepare_jacobian(C.F, X, workers=bad)
    with pytest.raises(ValueError, match="differs from the prep's workers"):
        cyad.jacobian(C.F, X, prep=prep, workers=map)
    pytest.importorskip("cloudpickle")
    with pytest.raises(TypeError, match="cannot be pickled"):
        cyad.hessian(C.g, X, workers=map)


# cyad's first-order float64 signature, for ctypes callbacks
FIRST_ORDER_F64 = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
    ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double), ctypes.c_ssize_t,
    ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_void_p)


def failing_on_late_directions(status):
    """F as a ctypes C function that returns `status` where a lane seeds direction N - 1
    (the last chunk: another part than the first's)."""
    @FIRST_ORDER_F64
    def f(x, dx, y, dy, n_x, n_y, width, context):
        x_ = np.ctypeslib.as_array(x, (n_x,))
        dx_ = np.ctypeslib.as_array(dx, (n_x, width))
        y_ = np.ctypeslib.as_array(y, (n_y,))
        dy_ = np.ctypeslib.as_array(dy, (n_y, width))
        if dx_[n_x - 1].any():
            return status
        y_[:] = 2.0 * x_
        dy_[:] = 2.0 * dx_
        return 0
    return cyad.FunctionWrapper(f, out_shape=(N,))


def test_a_failing_part_reaches_the_caller_and_the_prep_stays_usable():
    f = failing_on_late_directions(7)
    prep = cyad.prepare_jacobian(f, X, chunk=1, workers=3)
    for _ in range(2):
        with pytest.raises(cyad.FunctionError, match="status 7"):
            cyad.jacobian(f, X, prep=prep)
    assert_allclose(cyad.jacobian(C.F, X, prep=prep), F_jacobian(X), rtol=1e-13)


def test_an_exception_in_f_in_a_part_keeps_its_traceback():
    def f(x):
        if x[0] < 0:
            raise ArithmeticError("negative")
        return np.sin(x) * np.sum(x)

    prep = cyad.prepare_jacobian(f, X, engine="tape", chunk=1, workers=3)
    with pytest.raises(ArithmeticError, match="negative") as info:
        cyad.jacobian(f, -X, prep=prep)
    assert any(entry.name == "f" for entry in info.traceback)
    expected = np.diag(np.cos(X) * X.sum()) + np.outer(np.sin(X), np.ones(N))
    assert_allclose(cyad.jacobian(f, X, prep=prep), expected, rtol=1e-13)


def slow_function(seconds, n=64, interrupt=False):
    """F(x) = 2x (n elements) as a ctypes C function that sleeps `seconds` in every
    evaluation; with `interrupt`, the first evaluation on a thread other than the main one
    sends this process a SIGINT (Ctrl-C, once the call's parts run on cyad's threads: on
    the main thread a ctypes callback would swallow the KeyboardInterrupt)."""
    sent = []

    @FIRST_ORDER_F64
    def f(x, dx, y, dy, n_x, n_y, width, context):
        if interrupt and not sent and threading.current_thread() is not threading.main_thread():
            sent.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGINT)
        time.sleep(seconds)
        np.ctypeslib.as_array(y, (n_y,))[:] = 2.0 * np.ctypeslib.as_array(x, (n_x,))
        np.ctypeslib.as_array(dy, (n_y, width))[:] = 2.0 * np.ctypeslib.as_array(
            dx, (n_x, width))
        return 0
    return cyad.FunctionWrapper(f, out_shape=(n,)), sent


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler during the test: a library loaded before in this process
    may have left one of its own in place, which would not raise KeyboardInterrupt."""
    former = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, former)


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix",
                    reason="a SIGINT sent to this process")
def test_ctrl_c_stops_a_threaded_jacobian(python_sigint):
    x = np.ones(64)
    f, sent = slow_function(0.05, interrupt=True)   # 64 evaluations of 50 ms: 1.6 s on 2 parts
    prep = cyad.prepare_jacobian(f, x, chunk=1, workers=2)
    with pytest.raises(KeyboardInterrupt):
        cyad.jacobian(f, x, prep=prep)
    assert time.perf_counter() - sent[0] < 0.7     # the parts stopped at their next chunk
    sent.append("no more")
    assert_array_equal(cyad.jacobian(f, x, prep=prep), 2.0 * np.eye(64))


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix",
                    reason="a SIGINT sent to this process")
def test_ctrl_c_stops_points_on_threads(python_sigint):
    points = np.ones((64, 2))
    # a row's Jacobian in one evaluation: 1.6 s on 2 threads
    f, sent = slow_function(0.05, 2, interrupt=True)
    with pytest.raises(KeyboardInterrupt):
        cyad.at_points(cyad.jacobian, f, points, workers=2)
    assert time.perf_counter() - sent[0] < 0.7
    sent.append("no more")
    assert_array_equal(cyad.at_points(cyad.jacobian, f, points[:4], workers=2),
                       np.broadcast_to(2.0 * np.eye(2), (4, 2, 2)))


def broyden(x):
    y = (3.0 - 2.0 * x) * x + 1.0
    y[1:] -= x[:-1]
    y[:-1] -= 2.0 * x[1:]
    return y


def chained(x):
    return np.sum((x[1:] - x[:-1] ** 2) ** 2) + np.sum(np.sin(x) ** 2)


@pytest.mark.parametrize("engine", ["dual", "tape"])
@pytest.mark.parametrize("coloring", ["column", "row", "bidirectional"])
def test_sparse_jacobian_in_parts(coloring, engine):
    x = np.linspace(-1.0, 1.0, 40)
    f = broyden if engine == "tape" else cyad.record(broyden, x)
    serial = cyad.sparse_jacobian(f, x, coloring=coloring, engine=engine)
    prep = cyad.prepare_sparse_jacobian(f, x, coloring=coloring, engine=engine, workers=3)
    parallel = cyad.sparse_jacobian(f, x, prep=prep)
    assert_array_equal(parallel.toarray(), serial.toarray())
    expected = np.diag(3.0 - 4.0 * x) - np.eye(40, k=-1) - 2.0 * np.eye(40, k=1)
    assert_allclose(parallel.toarray(), expected, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("coloring", ["star", "acyclic"])
def test_sparse_hessian_in_parts(coloring):
    x = np.linspace(-1.0, 1.0, 30)
    serial = cyad.sparse_hessian(chained, x, coloring=coloring)
    prep = cyad.prepare_sparse_hessian(chained, x, coloring=coloring, workers=2)
    parallel = cyad.sparse_hessian(chained, x, prep=prep)
    assert_array_equal(parallel.toarray(), serial.toarray())
    assert_allclose(parallel.toarray(), cyad.hessian(chained, x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("engine", ["dual", "tape"])
def test_a_call_in_parts_with_out_allocates_nothing(engine, allocations_per_call):
    x = np.linspace(0.1, 1.0, 64)
    f = cyad.record(PYTHON.F, x) if engine == "dual" else PYTHON.F
    prep = cyad.prepare_jacobian(f, x, engine=engine, chunk=8, workers=2)
    out = np.empty((64, 64))
    cyad.jacobian(f, x, prep=prep, out=out)
    if engine == "dual":
        # a recorded function adds an arena the first time two parts run it at once
        for _ in range(100_000):
            if f.tape.programs[0][2] >= 2:
                break
            cyad.jacobian(f, x, prep=prep, out=out)
        assert f.tape.programs[0][2] == 2
    assert allocations_per_call(lambda: cyad.jacobian(f, x, prep=prep, out=out)) == 0


# -- a map-like: parts as tasks ------------------------------------------------------------

def process_pool():
    # spawned: forking a process whose JAX (a reference of other tests) runs threads may
    # deadlock
    import multiprocessing
    return multiprocessing.get_context("spawn").Pool(2)


@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_a_map_like_runs_the_parts_as_tasks(pool):
    pytest.importorskip("cloudpickle")
    from concurrent.futures import ThreadPoolExecutor
    from points_functions import scalar, vector
    x = np.linspace(-0.8, 0.9, 6)
    v = tuple(np.cos(np.arange(6) + k) for k in range(3))
    with (ThreadPoolExecutor(2) if pool == "threads" else process_pool()) as executor:
        workers = executor.map
        cases = [
            (cyad.jacobian, cyad.prepare_jacobian, vector, (), {"chunk": 1}),
            (cyad.value_and_jacobian, cyad.prepare_jacobian, vector, (), {"chunk": 1}),
            (cyad.value_gradient_and_hessian, cyad.prepare_hessian, scalar, (), {"chunk": 2}),
            (cyad.gradient_and_hvp, cyad.prepare_hvp, scalar, (v,), {"chunk": 1}),
            (cyad.pushforward, cyad.prepare_pushforward, vector, (v,), {"chunk": 1}),
            (cyad.pullback, cyad.prepare_pullback, vector,
             (tuple(t[:4] for t in v),), {"chunk": 1}),
        ]
        for operator, prepare, f, args, options in cases:
            prep = prepare(f, x, *args, engine="tape", workers=workers, **options)
            assert prep.workers_map is workers
            got = operator(f, x, *args, prep=prep)
            want = operator(f, x, *args, engine="tape", **options)
            for g, w in zip(as_tuple(got), as_tuple(want)):
                for a, b in zip(as_tuple(g), as_tuple(w)):
                    assert_array_equal(a, b)
        # cyad's default engine for a Hessian: a tape watching f's Python state, in every task
        prep = cyad.prepare_hessian(scalar, x, chunk=2, workers=workers)
        serial = cyad.prepare_hessian(scalar, x, chunk=2)
        for g, w in zip(cyad.value_gradient_and_hessian(scalar, x, prep=prep),
                        cyad.value_gradient_and_hessian(scalar, x, prep=serial)):
            assert_array_equal(g, w)
        # out= and f(y, x) reading y
        prep = cyad.prepare_jacobian(PYTHON.F_in_place, X, y=np.ones(N), engine="tape",
                                     chunk=2, workers=workers)
        y, out = np.ones(N), np.empty((N, N))
        assert cyad.jacobian(PYTHON.F_in_place, X, y=y, prep=prep, out=out) is out
        assert_allclose(out, F_jacobian(X), rtol=1e-13, atol=1e-13)
        assert_allclose(y, 1.0 + F_value(X), rtol=1e-13)


def test_sparse_products_on_a_map_like():
    pytest.importorskip("cloudpickle")
    from concurrent.futures import ThreadPoolExecutor
    x = np.linspace(-1.0, 1.0, 40)
    with ThreadPoolExecutor(2) as pool:
        jacobian = cyad.prepare_sparse_jacobian(broyden, x, coloring="bidirectional",
                                                engine="tape", workers=pool.map)
        hessian = cyad.prepare_sparse_hessian(chained, x, workers=pool.map)
        got = (cyad.sparse_jacobian(broyden, x, prep=jacobian),
               cyad.sparse_hessian(chained, x, prep=hessian))
    want = (cyad.sparse_jacobian(broyden, x, coloring="bidirectional", engine="tape"),
            cyad.sparse_hessian(chained, x))
    for g, w in zip(got, want):
        assert_array_equal(g.toarray(), w.toarray())


def test_a_map_losing_an_entry_or_a_task_is_an_error():
    pytest.importorskip("cloudpickle")

    def dropping(func, tasks):   # a map whose second task came back as never run
        answers = [func(t) for t in tasks]
        value, first, main, y = answers[-1]
        main[...] = np.nan     # (computed entries overwritten: written by none)
        main.view(np.uint64)[...] = np.uint64(0x7FF4C0DED0D0CAFE)
        return answers

    prep = cyad.prepare_jacobian(PYTHON.F, X, engine="tape", chunk=1, workers=dropping)
    with pytest.raises(RuntimeError, match="by none"):
        cyad.jacobian(PYTHON.F, X, prep=prep)
    prep = cyad.prepare_jacobian(PYTHON.F, X, engine="tape", chunk=1,
                                 workers=lambda func, tasks: [func(t) for t in tasks][:1])
    with pytest.raises(RuntimeError, match="answered 1 of"):
        cyad.jacobian(PYTHON.F, X, prep=prep)

"""cyad.dask and cyad.at_points on Dask LocalClusters (worker processes, and threads), started
and closed here: results as the serial loop's, bit for bit; an exception in f reaches the
caller and the workers' preps stay usable; a worker killed mid-run costs a retry, never
rows."""
import functools
import os
import traceback

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from points_functions import Refused, dies_once, refusing, scalar, vector

import cyad

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
pytest.importorskip("cloudpickle")
import cyad.dask  # noqa: E402  (needs dask)

HERE = os.path.dirname(os.path.abspath(__file__))


def random_points(m, n, seed=0):
    return np.random.default_rng(seed).uniform(-0.9, 0.9, (m, n))


def put_tests_on_path(client):
    """The workers import the tests' functions by name (exec: pickled by reference)."""
    client.run(exec, f"import sys; sys.path.insert(0, {HERE!r})")


@pytest.fixture(scope="module", params=["processes", "threads"])
def client(request):
    processes = request.param == "processes"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=processes,
                                  dashboard_address=":0") \
            as cluster, distributed.Client(cluster) as client:
        put_tests_on_path(client)
        yield client


def test_gradients_jacobians_and_hessians_of_a_dask_array(client):
    points = random_points(20, 4, seed=1)
    chunked = da.from_array(points, chunks=(6, 2))
    g = cyad.dask.gradient(scalar, chunked)
    assert isinstance(g, da.Array) and g.shape == (20, 4)
    assert_array_equal(g.compute(), cyad.at_points(cyad.gradient, scalar, points))
    j = cyad.dask.jacobian(vector, chunked)
    assert j.shape == (20, 4, 4)
    assert_array_equal(j.compute(), cyad.at_points(cyad.jacobian, vector, points))
    h = cyad.dask.hessian(scalar, chunked)
    assert h.shape == (20, 4, 4)
    want = cyad.at_points(cyad.hessian, scalar, points)
    assert_array_equal(h.compute(), want)
    assert_allclose(h.compute(), np.swapaxes(want, 1, 2), rtol=1e-13, atol=1e-12)


def test_a_jacobian_with_its_output_shape_given(client):
    points = random_points(9, 3, seed=2)
    j = cyad.dask.jacobian(vector, da.from_array(points, chunks=4), out_shape=(4,))
    assert_array_equal(j.compute(), cyad.at_points(cyad.jacobian, vector, points))


def test_at_points_through_the_clients_executor(client):
    points, v = random_points(12, 5, seed=3), random_points(12, 5, seed=4)
    with client.get_executor() as executor:
        got = cyad.at_points(cyad.gradient_and_hvp, scalar, points, v, workers=executor.map,
                             tasks=4)
    want = cyad.at_points(cyad.gradient_and_hvp, scalar, points, v)
    for g, w in zip(got, want):
        assert_array_equal(g, w)


def test_an_exception_in_f_reaches_the_caller_and_workers_stay_usable(client):
    points = random_points(10, 3, seed=5)
    bad = points.copy()
    bad[8, 0] = 5.0
    with pytest.raises(Refused, match="refuses") as info:
        cyad.dask.gradient(refusing, da.from_array(bad, chunks=3), engine="dual").compute()
    assert "in refusing" in "".join(traceback.format_exception(info.value))   # f's frame
    got = cyad.dask.gradient(refusing, da.from_array(points, chunks=3), engine="dual")
    assert_array_equal(got.compute(), cyad.at_points(cyad.gradient, refusing, points,
                                                     engine="dual"))
    with client.get_executor() as executor:
        with pytest.raises(Refused):
            cyad.at_points(cyad.gradient, refusing, bad, engine="dual", workers=executor.map,
                           tasks=3)


def test_a_worker_killed_mid_run_costs_a_retry_not_rows(tmp_path):
    marker = str(tmp_path / "died")
    points = random_points(8, 3, seed=6)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        put_tests_on_path(client)
        f = functools.partial(dies_once, marker=marker)
        g = cyad.dask.gradient(f, da.from_array(points, chunks=4))
        assert_array_equal(g.compute(), 2 * points)
    assert os.path.exists(marker)


def test_a_worker_lost_beyond_the_allowed_failures_is_a_clear_error(tmp_path):
    import dask

    marker = str(tmp_path / "died")
    points = random_points(4, 3, seed=7)
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                     dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        put_tests_on_path(client)
        f = functools.partial(dies_once, marker=marker)
        with pytest.raises(distributed.KilledWorker):
            cyad.dask.gradient(f, da.from_array(points, chunks=4)).compute()


def test_a_jacobian_and_a_hessian_in_parts_on_the_clients_executor(client):
    x = np.linspace(-0.8, 0.9, 7)
    with client.get_executor() as executor:
        jacobian = cyad.prepare_jacobian(vector, x[:3], engine="tape", chunk=1,
                                         workers=executor.map)
        hessian = cyad.prepare_hessian(scalar, x, engine="tape", chunk=2, workers=executor.map)
        got = (cyad.jacobian(vector, x[:3], prep=jacobian),
               *cyad.value_gradient_and_hessian(scalar, x, prep=hessian))
    want = (cyad.jacobian(vector, x[:3], engine="tape", chunk=1),
            *cyad.value_gradient_and_hessian(scalar, x, engine="tape", chunk=2))
    for g, w in zip(got, want):
        assert_array_equal(g, w)

"""cyad.at_points: derivatives at many points, serially against threads and a Dask cluster.

Threads: gradients of Rosenbrock (n = 10) at 10^4 points, on a tape named with
engine="tape" (the compiled loop runs without the GIL, so threads overlap), on the default
tape (which compares f's Python state once per block, with the GIL) and on the dual engine
(a Python f holds the GIL for every evaluation: threads cannot gain). Dask: gradients at 64
points of an f costing about `cost_ms` milliseconds per call (Python work on the dual
engine), serially against a map over a LocalCluster of 2 worker processes, a task each; the
ratio at each cost shows where Dask's cost per task (0.2-1 ms) is paid back.
Hessians with per-point arguments: the arguments as inputs of each row against the same f
of x and the arguments widened into one differentiated vector.
"""
import numpy as np

import cyad

from .common import skip

POINTS = 10_000


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def costly(x, repeats):
    # about 2 us of interpreted NumPy calls per repeat on the dual engine
    total = np.sum(x * x)
    for _ in range(repeats):
        total = total + np.sum(np.sin(x) * 1e-6)
    return total


class GradientsOnThreads:
    """Gradients of Rosenbrock (n = 10) at 10^4 points; workers=1 is the serial loop."""

    params = [["tape", "default", "dual"], [1, 2]]
    param_names = ["engine", "workers"]

    def setup(self, engine, workers):
        self.points = np.random.default_rng(0).uniform(-1.0, 1.0, (POINTS, 10))
        self.out = np.empty_like(self.points)

    def time_gradients(self, engine, workers):
        cyad.at_points(cyad.gradient, rosenbrock, self.points, workers=workers, out=self.out,
                       engine=None if engine == "default" else engine)


class GradientsOnDask:
    """Gradients at 64 points of an f of about `cost_ms` per call: serially, and on a Dask
    LocalCluster of 2 worker processes (a task each)."""

    params = [[0.1, 1.0], ["serial", "dask"]]
    param_names = ["cost_ms", "workers"]
    timeout = 120

    def setup(self, cost_ms, workers):
        import functools

        self.points = np.random.default_rng(0).uniform(-1.0, 1.0, (64, 10))
        self.f = functools.partial(costly, repeats=int(cost_ms * 450))
        self.map = None
        if workers == "dask":
            try:
                import distributed
            except ImportError:
                skip("needs dask[distributed]")
            self.cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                                    dashboard_address=":0")
            self.client = distributed.Client(self.cluster)
            self.executor = self.client.get_executor()
            self.map = self.executor.map
            self.time_gradients(cost_ms, workers)   # every worker prepares once

    def teardown(self, cost_ms, workers):
        if workers == "dask":
            self.client.close()
            self.cluster.close()

    def time_gradients(self, cost_ms, workers):
        cyad.at_points(cyad.gradient, self.f, self.points, engine="dual", workers=self.map,
                       tasks=2)


def with_data(x, a):
    return np.sum(np.sin(x) ** 2) * np.sum(x * a[:4]) + np.sum(a ** 2) * np.sum(x ** 3)


class HessiansWithArguments:
    """Hessians at 2 000 points of x (4 elements) with 40 numbers of per-point data: the
    data as per-point args= (inputs of each row's call, x alone differentiated) against
    the same f of z = (x, data) with the Hessian's x-block kept (what differentiating the
    data with x costs: 44 directions instead of 4)."""

    params = [["args", "widened z"], ["tape", "dual"]]
    param_names = ["form", "engine"]

    def setup(self, form, engine):
        rng = np.random.default_rng(0)
        self.points, self.data = rng.standard_normal((2000, 4)), rng.standard_normal((2000, 40))
        self.z = np.concatenate([self.points, self.data], axis=1)

    def time_hessians(self, form, engine):
        if form == "args":
            cyad.at_points(cyad.hessian, with_data, self.points, args=(self.data,),
                           engine=engine)
        else:
            cyad.at_points(cyad.hessian, lambda z: with_data(z[:4], z[4:]), self.z,
                           engine=engine)

"""cyad.record: the Jacobian of a recorded Python function through its C function, on 1
and 2 threads.

The same work, 2 x CALLS prepared Jacobians of tanh(A @ x) + x**2 (n = 100, A dense),
split over `threads` Python threads with a prep each: the dual engine runs a recorded
function without the GIL, so the threads' calls overlap (time at 1 thread / time at 2: the
gain of the second core). `Baseline`: the same Jacobians of the Python f on one thread by
the dual engine (f evaluated on dual arrays per chunk: what the recorded function replaces)
and by the tape engine (its own prep, which also caches the part of the tape that reads the
basis seeds alone, here A times them: a recorded function's caller seeds through the
signature, so each call replays that part).
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import cyad

from .tape import dense

N = 100
CALLS = 50


class RecordedJacobian:
    params = [[1, 2]]
    param_names = ["threads"]

    def setup(self, threads):
        f = dense(N)
        self.x = np.linspace(-1, 1, N)
        self.wrapper = cyad.record(f, self.x)
        self.pool = ThreadPoolExecutor(threads)
        self.jobs = [(cyad.prepare_jacobian(self.wrapper, self.x), np.empty((N, N)),
                      2 * CALLS // threads) for _ in range(threads)]
        for prep, out, _ in self.jobs:
            cyad.jacobian(self.wrapper, self.x, prep=prep, out=out)

    def teardown(self, threads):
        self.pool.shutdown()

    def _run(self, job):
        prep, out, calls = job
        for _ in range(calls):
            cyad.jacobian(self.wrapper, self.x, prep=prep, out=out)

    def time_jacobians(self, threads):
        list(self.pool.map(self._run, self.jobs))


class Baseline:
    """The same Jacobians of the Python f on one thread, by each engine's own prep."""
    params = [["dual", "tape"]]
    param_names = ["engine"]

    def setup(self, engine):
        self.x = np.linspace(-1, 1, N)
        self.f = dense(N)
        self.prep = cyad.prepare_jacobian(self.f, self.x, engine=engine)
        self.out = np.empty((N, N))
        cyad.jacobian(self.f, self.x, prep=self.prep, out=self.out)

    def time_jacobians(self, engine):
        for _ in range(2 * CALLS):
            cyad.jacobian(self.f, self.x, prep=self.prep, out=self.out)

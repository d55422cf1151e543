"""cyad's threads: one call in parts (workers=) and the replay's threads (cyad.set_threads).

Each class times the same call on 1 thread, the baseline beside it, and on 2: their ratio
is the scaling (asv_bench/scaling.py prints the table for every count of threads a machine
has, beside jax.jit).

- JacobianInParts: the prepared Jacobian of tanh(A @ x) + x**2 at n = 1000 with
  workers=k, on engine="tape" (every part replays the value part and compares A, which f
  closes over, once more) and on the function cyad.record made of f (a C function on the
  dual engine: the parts' chunks are all of the work).
- ReplayThreads: the JVP of sin(x) * exp(-x**2) + x**3 and the gradient of Rosenbrock's
  function at n = 10^6 on engine="tape", the replay split across cyad.set_threads(k)
  threads.
"""
import functools

import numpy as np

import cyad


def tanh_residual(x, a):
    return np.tanh(a @ x) + x**2


def elementwise(x):
    return np.sin(x) * np.exp(-x**2) + x**3


def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


class JacobianInParts:
    params = [["tape", "recorded"], [1, 2]]
    param_names = ["function", "workers"]

    def setup(self, function, workers):
        rng = np.random.default_rng(0)
        n = 1000
        a = rng.standard_normal((n, n)) / np.sqrt(n)
        self.x = rng.uniform(-1.0, 1.0, n)
        f = functools.partial(tanh_residual, a=a)
        self.f = f if function == "tape" else cyad.record(f, self.x)
        engine = "tape" if function == "tape" else None
        self.former = cyad.set_threads(1)    # the parts alone
        self.prep = cyad.prepare_jacobian(self.f, self.x, engine=engine, workers=workers)
        self.out = np.empty((n, n))
        self.time_jacobian(function, workers)

    def teardown(self, function, workers):
        cyad.set_threads(self.former)

    def time_jacobian(self, function, workers):
        cyad.jacobian(self.f, self.x, prep=self.prep, out=self.out)


class ReplayThreads:
    params = [["jvp", "gradient"], [1, 2]]
    param_names = ["call", "threads"]

    def setup(self, call, threads):
        n = 10**6
        self.x = np.random.default_rng(0).uniform(-1.0, 1.0, n)
        self.dx = np.ones(n)
        self.out = np.empty(n)
        if call == "jvp":
            self.prep = cyad.prepare_pushforward(elementwise, self.x, self.dx, engine="tape")
        else:
            self.prep = cyad.prepare_gradient(rosenbrock, self.x, engine="tape")
        self.former = cyad.set_threads(threads)
        self.time_call(call, threads)

    def teardown(self, call, threads):
        cyad.set_threads(self.former)

    def time_call(self, call, threads):
        if call == "jvp":
            cyad.pushforward(elementwise, self.x, self.dx, prep=self.prep, out=self.out)
        else:
            cyad.gradient(rosenbrock, self.x, prep=self.prep, out=self.out)

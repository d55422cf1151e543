"""SciPy's functions that cyad puts dispatching wrappers on
(cyad/_primitives/scipy_dispatch.py).

- time_plain_*: a plain call through the wrapper beside the same call of SciPy's own
  function (``__wrapped__``), the baseline: the wrapper's cost on code that never meets cyad;
- time_hessian_expm: the Hessian of sum(expm(A)**2) for a 3 x 3 A on each engine, the custom
  rules run at second order.
"""
import numpy as np

from .common import skip

try:
    import scipy.linalg
    import scipy.special
except ImportError:   # cyad needs no SciPy; these benchmarks do
    scipy = None

import cyad  # noqa: E402  (after SciPy: its modules get the wrappers now, not at import)


class PlainCalls:
    params = [["wrapped", "scipy"]]
    param_names = ["function"]

    def setup(self, function):
        if scipy is None:
            skip("SciPy is not installed")
        self.a = 0.1 * np.arange(9.0).reshape(3, 3)
        self.x = np.linspace(0.0, 1.0, 10)
        expm, logsumexp = scipy.linalg.expm, scipy.special.logsumexp
        if function == "scipy":
            expm, logsumexp = expm.__wrapped__, logsumexp.__wrapped__
        self.expm, self.logsumexp = expm, logsumexp

    def time_plain_expm(self, function):
        self.expm(self.a)

    def time_plain_logsumexp(self, function):
        self.logsumexp(self.x, b=self.x)


class HessianOfExpm:
    params = [["dual", "tape"]]
    param_names = ["engine"]

    def setup(self, engine):
        if scipy is None:
            skip("SciPy is not installed")
        self.x = 0.1 * np.arange(9.0)
        self.prep = cyad.prepare_hessian(self.f, self.x, engine=engine)

    @staticmethod
    def f(x):
        return np.sum(scipy.linalg.expm(x.reshape(3, 3)) ** 2)

    def time_hessian_expm(self, engine):
        cyad.hessian(self.f, self.x, prep=self.prep)

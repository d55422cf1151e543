"""scipy.stats' distribution methods, which cyad wraps (cyad/_primitives/scipy_stats.py).

- time_plain_logpdf: ``norm.logpdf(x)`` of 10 and 10**4 points through the wrapper, beside
  SciPy's own method (``__wrapped__``), the baseline: the wrapper's cost on code that never
  meets cyad;
- time_likelihood_gradient: the gradient of a likelihood of 10**4 samples (norm, t, gamma; its
  parameters a vector of 2 or 3) by a prepared cyad gradient (engine="tape", out=), beside
  the same likelihood written with jax.scipy.stats under jax.jit(jax.grad), the baseline.
"""
import numpy as np

from .common import skip

try:
    import scipy.stats
except ImportError:   # cyad needs no SciPy; these benchmarks do
    scipy = None

import cyad  # noqa: E402  (after SciPy: its modules get the wrappers now, not at import)

try:
    import jax
    import jax.numpy as jnp
    import jax.scipy.stats as jax_stats
except ImportError:
    jax = None


class PlainLogpdf:
    params = [["wrapped", "scipy"], [10, 10_000]]
    param_names = ["method", "n"]

    def setup(self, method, n):
        if scipy is None:
            skip("SciPy is not installed")
        self.x = np.linspace(-3.0, 3.0, n)
        norm = scipy.stats.norm
        original = type(norm).logpdf.__wrapped__
        self.logpdf = norm.logpdf if method == "wrapped" else (
            lambda x, *args, **kwargs: original(norm, x, *args, **kwargs))

    def time_plain_logpdf(self, method, n):
        self.logpdf(self.x, 0.3, 1.5)


def _likelihood(name, data, xp_stats):
    distribution = getattr(xp_stats, name)
    if name == "norm":
        return lambda p: -distribution.logpdf(data, p[0], p[1]).sum()
    if name == "t":
        return lambda p: -distribution.logpdf(data, p[0], p[1], p[2]).sum()
    return lambda p: -distribution.logpdf(data, p[0], scale=p[1]).sum()


class LikelihoodGradient:
    params = [["cyad", "jax"], ["norm", "t", "gamma"]]
    param_names = ["library", "distribution"]

    def setup(self, library, distribution):
        if scipy is None:
            skip("SciPy is not installed")
        rng = np.random.default_rng(0)
        n = 10_000
        data, self.p = {
            "norm": (rng.normal(1.0, 2.0, n), np.array([0.5, 1.5])),
            "t": (0.3 + 1.5 * rng.standard_t(4.0, n), np.array([4.0, 0.3, 1.5])),
            "gamma": (rng.gamma(2.0, 1.5, n), np.array([2.0, 1.5])),
        }[distribution]
        if library == "jax":
            if jax is None:
                skip("JAX is not installed")
            jax.config.update("jax_enable_x64", True)
            f = _likelihood(distribution, jnp.asarray(data), jax_stats)
            gradient = jax.jit(jax.grad(f))
            p = jnp.asarray(self.p)
            self.call = lambda: gradient(p).block_until_ready()
        else:
            f = _likelihood(distribution, data, scipy.stats)
            prep = cyad.prepare_gradient(f, self.p, engine="tape")
            out = np.empty_like(self.p)
            self.call = lambda: cyad.gradient(f, self.p, prep=prep, out=out)
        self.call()

    def time_likelihood_gradient(self, library, distribution):
        self.call()

"""NumPy functions on dual arrays (the primitive table as the dual engine runs it).

Functions (the `function` parameter):
- "layout": f(x) = concatenate([x @ A, x * sum(x)]) reshaped to (2, n), transposed and
  flattened: a product and linear/structural functions, the Jacobian at first order
- "gaussian": the log-likelihood -r S^-1 r / 2 - log det S / 2 of a 3 x 3 S built from x and
  r = x[9:12], by solve and slogdet, and by cholesky: its Hessian (second order, every
  primitive's JVP rule run on duals); n is 12 whatever the size
- "survival" and "quantile" (statistics, both engines): the sum of a survival curve
  cumprod(1 - h) (a scan of log2(n) products) and a quantile of x**2 (a sort and an
  interpolation), their gradients at n = 100 and 1000
"""
import numpy as np

import cyad

from .common import CALLS, Operator, skip


def layout_of(n):
    a = np.random.default_rng(0).standard_normal((n, n)) / np.sqrt(n)

    def layout(x):
        z = np.concatenate([x @ a, x * np.sum(x)])
        return z.reshape(2, n).transpose().reshape(-1)

    return layout


def _spd(x):
    m = x[:9].reshape(3, 3)
    return m @ m.T + np.diag(np.array([1.0, 2.5, 4.0]))


def gaussian(x):
    s, r = _spd(x), x[9:12]
    return -0.5 * (r @ np.linalg.solve(s, r)) - 0.5 * np.linalg.slogdet(s)[1]


def gaussian_by_cholesky(x):
    low = np.linalg.cholesky(_spd(x))
    z = np.linalg.solve(low, x[9:12])
    return -0.5 * (z @ z) - np.sum(np.log(np.abs(np.diag(low))))


class LayoutJacobian(Operator):
    operator = "jacobian"
    params = [[10, 100], CALLS]
    param_names = ["n", "call"]

    def setup(self, n, call):
        self.operator_call(call, layout_of(n), np.linspace(0.1, 1.0, n))


class GaussianHessian(Operator):
    operator = "hessian"
    params = [["solve and slogdet", "cholesky"], CALLS]
    param_names = ["function", "call"]

    def setup(self, function, call):
        if call == "unprepared" and function == "cholesky":
            skip("the prepared call measures the same rules")
        f = gaussian if function == "solve and slogdet" else gaussian_by_cholesky
        self.operator_call(call, f, np.linspace(-0.5, 0.7, 12))


def survival(x):
    return np.sum(np.cumprod(1.0 - 0.5 * x))


def upper_quantile(x):
    return np.quantile(x * x, 0.9) + np.median(x)


class StatisticsGradient(Operator):
    operator = "gradient"
    params = [["survival", "quantile"], [100, 1_000], ["dual", "tape"]]
    param_names = ["function", "n", "engine"]

    def setup(self, function, n, engine):
        f = survival if function == "survival" else upper_quantile
        x = np.random.default_rng(n).uniform(0.0, 1.0, n)
        prep = cyad.prepare_gradient(f, x, engine=engine)
        out = np.empty(n)
        self.call = lambda: cyad.gradient(f, x, prep=prep, out=out)

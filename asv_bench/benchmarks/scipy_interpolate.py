"""scipy.interpolate's classes, which cyad puts wrappers on
(cyad/_primitives/scipy_interpolate.py).

- time_plain_*: a plain evaluation (and a construction) through the wrapper beside the same
  call of SciPy's own method (``__wrapped__``), the baseline: the wrapper's cost on code
  that never meets cyad;
- time_gradient_*: the prepared gradient of the sum of squares of a cubic spline (200 knots,
  1 000 points) in its data and in its points, on each engine.
"""
import numpy as np

from .common import skip

try:
    import scipy.interpolate
    from scipy.interpolate._interpolate import _PPolyBase
except ImportError:   # cyad needs no SciPy; these benchmarks do
    scipy = None

import cyad  # noqa: E402  (after SciPy: its classes get the wrappers now, not at import)


class PlainCalls:
    params = [["wrapped", "scipy"]]
    param_names = ["method"]

    def setup(self, method):
        if scipy is None:
            skip("SciPy is not installed")
        si = scipy.interpolate
        self.x = np.linspace(0.0, 3.0, 20)
        y = np.sin(self.x)
        self.points = np.linspace(0.1, 2.9, 10)
        self.spline = si.CubicSpline(self.x, y)
        self.bspline = si.make_interp_spline(self.x, y)
        self.linear = si.interp1d(self.x, y)
        self.grid = si.RegularGridInterpolator((self.x[:6], self.x[:7]),
                                               np.outer(y[:6], y[:7]))
        self.xi = np.column_stack([self.points[:5] / 3, self.points[:5] / 2])
        self.y = y
        calls = (_PPolyBase.__call__, si.BSpline.__call__, si.interp1d.__call__,
                 si.RegularGridInterpolator.__call__, si.make_interp_spline)
        if method == "scipy":
            calls = tuple(c.__wrapped__ for c in calls)
        (self.ppoly_call, self.bspline_call, self.interp1d_call, self.grid_call,
         self.make_interp_spline) = calls

    def time_plain_cubic_spline(self, method):
        self.ppoly_call(self.spline, self.points)

    def time_plain_bspline(self, method):
        self.bspline_call(self.bspline, self.points)

    def time_plain_interp1d(self, method):
        self.interp1d_call(self.linear, self.points)

    def time_plain_grid(self, method):
        self.grid_call(self.grid, self.xi)

    def time_plain_make_interp_spline(self, method):
        self.make_interp_spline(self.x, self.y)


class GradientOfSpline:
    params = [["dual", "tape"]]
    param_names = ["engine"]

    def setup(self, engine):
        if scipy is None:
            skip("SciPy is not installed")
        si = scipy.interpolate
        self.x = np.linspace(0.0, 10.0, 200)
        self.y = np.sin(self.x)
        self.points = np.linspace(0.05, 9.95, 1000)
        self.spline = si.CubicSpline(self.x, self.y)
        self.in_data = cyad.prepare_gradient(self.of_data, self.y, engine=engine)
        self.in_points = cyad.prepare_gradient(self.of_points, self.points, engine=engine)

    def of_data(self, y):
        return np.sum(scipy.interpolate.CubicSpline(self.x, y)(self.points) ** 2)

    def of_points(self, p):
        return np.sum(self.spline(p) ** 2)

    def time_gradient_in_data(self, engine):
        cyad.gradient(self.of_data, self.y, prep=self.in_data)

    def time_gradient_in_points(self, engine):
        cyad.gradient(self.of_points, self.points, prep=self.in_points)

"""Products by scipy.sparse's matrices (cyad/_primitives/scipy_sparse_matrices.py).

- `PlainProduct`: the method under a plain ``A @ x`` of ndarrays, cyad's wrapper of SciPy's
  ``_matmul_dispatch``, beside SciPy's own method (``__wrapped__``), the baseline: the
  wrapper's cost on code that never meets cyad (a tridiagonal csr_array, 10 and 1000 rows);
- `PdeResidual`: the sparse Jacobian of the residual A u + u^3 - f of the 2-D Laplacian A
  (scipy.sparse.kron of 1-D ones) on a 300 x 300 grid, prepared, with ``out=``, on each
  engine, beside one evaluation of the residual with NumPy.
"""
import numpy as np

from .common import Call, skip

try:
    import scipy.sparse
except ImportError:   # cyad needs no SciPy; these benchmarks do
    scipy = None

import cyad  # noqa: E402  (after SciPy: its classes get the wrappers now, not at import)


def laplacian(n):
    one = scipy.sparse.diags_array([np.ones(n - 1), -2.0 * np.ones(n), np.ones(n - 1)],
                                   offsets=[-1, 0, 1])
    eye = scipy.sparse.eye_array(n)
    return (scipy.sparse.kron(eye, one) + scipy.sparse.kron(one, eye)).tocsr()


class PlainProduct(Call):
    params = [["wrapped", "scipy"], [10, 1000]]
    param_names = ["method", "n"]

    def setup(self, method, n):
        if scipy is None:
            skip("SciPy is not installed")
        a = scipy.sparse.diags_array([np.ones(n - 1), -2.0 * np.ones(n), np.ones(n - 1)],
                                     offsets=[-1, 0, 1], format="csr")
        x = np.ones(n)
        # (the method under ``a @ x``, called as ``a @ x`` calls it)
        dispatch = type(a)._matmul_dispatch
        if method == "scipy":
            dispatch = dispatch.__wrapped__
        self.call = lambda: dispatch(a, x)


class PdeResidual(Call):
    params = [["residual", "sparse tape", "sparse dual"]]
    param_names = ["call"]

    def setup(self, call):
        if scipy is None:
            skip("SciPy is not installed")
        a = laplacian(300)
        f = np.ones(300 * 300)
        u = np.linspace(0.0, 1.0, 300 * 300)

        def residual(u):
            return a @ u + u ** 3 - f
        if call == "residual":
            self.call = lambda: residual(u)
            return
        prep = cyad.prepare_sparse_jacobian(residual, u, engine=call.split()[1])
        out = prep.new_result()
        self.call = lambda: cyad.sparse_jacobian(residual, u, prep=prep, out=out)

"""cyad.scipy's sparse Jacobians beside what SciPy's solvers do without them.

The 2-D Brusselator at n = 32 (2 048 states, examples/scipy/brusselator.py): one call of the
right-hand side, cyad's sparse ODE Jacobian (prepared, a new CSC array per call), SciPy's
grouped finite differences as BDF computes them (``num_jac`` with the same pattern), and
one of BDF's sparse LU factorisations of I - c J (SuperLU, as BDF calls it). Then BDF end
to end over t in [0, 11.5] with either Jacobian: the LU factorisations and solves are the
same for both, and take most of the time.
"""
import numpy as np

import cyad.scipy

from .common import Call, skip

N = 32


def brusselator(t, y, n, forcing):
    u = y[:n * n].reshape(n, n)
    v = y[n * n:].reshape(n, n)

    def laplacian(w):
        padded = np.concatenate([w[-1:], w, w[:1]], axis=0)
        padded = np.concatenate([padded[:, -1:], padded, padded[:, :1]], axis=1)
        return (padded[:-2, 1:-1] + padded[2:, 1:-1] + padded[1:-1, :-2] + padded[1:-1, 2:]
                - 4.0 * w)
    uuv = u * u * v
    du = 1.0 + uuv - 4.4 * u + (0.1 * n * n) * laplacian(u)
    if t >= 1.1:
        du = du + forcing
    dv = 3.4 * u - uuv + (0.1 * n * n) * laplacian(v)
    return np.concatenate([du.ravel(), dv.ravel()])


def problem(n):
    x = np.arange(n) / n
    X, Y = np.meshgrid(x, x, indexing="ij")
    y0 = np.concatenate([(22.0 * Y * (1.0 - Y) ** 1.5).ravel(),
                         (27.0 * X * (1.0 - X) ** 1.5).ravel()])
    forcing = np.where((X - 0.3) ** 2 + (Y - 0.6) ** 2 <= 0.01, 5.0, 0.0)
    return y0, (n, forcing)


def jacobian_calls(n):
    try:
        import scipy.sparse
        from scipy.integrate._ivp.common import num_jac
        from scipy.optimize._numdiff import group_columns
        from scipy.sparse.linalg import splu
    except ImportError:    # pragma: no cover - SciPy is in the benchmark environment
        skip("needs SciPy")
    y0, args = problem(n)
    f0 = brusselator(0.0, y0, *args)
    jac = cyad.scipy.ode_jacobian(brusselator, sparse=True)
    J = jac(0.0, y0, *args)
    pattern = scipy.sparse.csc_matrix(cyad.scipy.ode_jac_sparsity(brusselator, 0.0, y0, args))
    sparsity = (pattern, group_columns(pattern))

    def fun_columns(t, y):
        # BDF's vectorised view of fun: one call per column (vectorized=False)
        if y.ndim == 1:
            return brusselator(t, y, *args)
        return np.stack([brusselator(t, column, *args) for column in y.T], axis=1)

    A = (scipy.sparse.eye(2 * n * n, format="csc") - 0.01 * J).tocsc()
    return {
        "rhs": lambda: brusselator(0.0, y0, *args),
        "cyad sparse jacobian": lambda: jac(0.0, y0, *args),
        "scipy num_jac": lambda: num_jac(fun_columns, 0.0, y0, f0, 1e-6, None, sparsity),
        "splu of I - c J": lambda: splu(A),
    }


class BrusselatorJacobian(Call):
    params = [["rhs", "cyad sparse jacobian", "scipy num_jac", "splu of I - c J"]]
    param_names = ["call"]

    def setup(self, call):
        self.call = jacobian_calls(N)[call]


class BrusselatorBDF:
    """solve_ivp(method="BDF") end to end, rtol = atol = 1e-6."""

    params = [["cyad sparse jacobian", "scipy jac_sparsity"]]
    param_names = ["jacobian"]
    number = 1
    repeat = (1, 3, 60.0)
    timeout = 300

    def setup(self, jacobian):
        try:
            from scipy.integrate import solve_ivp
        except ImportError:    # pragma: no cover
            skip("needs SciPy")
        y0, args = problem(N)
        if jacobian == "cyad sparse jacobian":
            jac = cyad.scipy.ode_jacobian(brusselator, sparse=True)
            options = {"jac": jac}
        else:
            options = {"jac_sparsity": cyad.scipy.ode_jac_sparsity(brusselator, 0.0, y0, args)}
        self.solve = lambda: solve_ivp(brusselator, (0.0, 11.5), y0, method="BDF", args=args,
                                       rtol=1e-6, atol=1e-6, **options)

    def time_solve(self, jacobian):
        self.solve()

"""cyad.jacobian and cyad.value_and_jacobian of square dense Jacobians.

Functions (the `function` parameter):
- "dense": tanh(A @ x) + x**2 with a dense n × n matrix A, a Python function
- "copy": f(y, x): y[...] = x, a Python function (its Jacobian is the identity)
- "C copy": the same copy as a C function of cyad's signature
  (cyad._reporting.profile.copy_function())

The result is n × n: 800 MB at n = 10 000.
"""
import numpy as np

from .common import CALLS, COPIES, SIZES, Call, Operator, copy, output, skip


def dense_of(n):
    """tanh(A @ x) + x**2 for a random A of n × n, and its value and Jacobian by hand."""
    a = np.random.default_rng(0).standard_normal((n, n))
    a /= np.sqrt(n)

    def dense(x):
        return np.tanh(a @ x) + x**2

    def by_hand(x, value, jacobian):
        """value <- tanh(A x) + x², jacobian <- (1 - tanh(A x)²)[:, None] * A + diag(2x)."""
        t = np.tanh(a @ x)
        np.add(t, x**2, out=value)
        np.multiply((1.0 - t**2)[:, None], a, out=jacobian)
        diagonal(jacobian)[...] += 2.0 * x

    return dense, by_hand


def copy_by_hand(x, value, jacobian):
    """value <- x, jacobian <- the identity."""
    np.copyto(value, x)
    jacobian.fill(0.0)
    diagonal(jacobian)[...] = 1.0


def diagonal(matrix):
    """The diagonal of a C-contiguous square matrix, as a writable view."""
    return matrix.reshape(-1)[:: matrix.shape[0] + 1]


def inputs(n):
    return np.linspace(0.1, 1.0, n)


class Jacobian(Operator):
    operator = "jacobian"
    params = [SIZES, CALLS, ["dense", "copy", "C copy"]]
    param_names = ["n", "call", "function"]

    def setup(self, n, call, function):
        if n >= 10_000 and (function != "C copy" or call == "unprepared"):
            # 1250 evaluations of a Python f (~1.5 s for the copy, minutes for "dense"), or a
            # fresh 800 MB result every call (~1.2 s)
            skip("more than a second per call")
        x = inputs(n)
        if function == "dense":
            dense, _ = dense_of(n)
            self.operator_call(call, dense, x)
        else:
            self.operator_call(call, COPIES[function], x, y=np.zeros(n))


class ValueAndJacobian(Jacobian):
    operator = "value_and_jacobian"


class Baseline(Call):
    """Without cyad: the primal alone, or value and Jacobian written by hand in NumPy."""

    params = [SIZES, ["dense", "copy"], ["primal", "by hand"]]
    param_names = ["n", "function", "computes"]

    def setup(self, n, function, computes):
        x, value = inputs(n), output(n)
        if function == "dense":
            primal, by_hand = dense_of(n)
        else:
            primal, by_hand = (lambda x: copy(value, x)), copy_by_hand
        if computes == "primal":
            self.call = lambda: primal(x)
        else:
            jacobian = output((n, n))
            self.call = lambda: by_hand(x, value, jacobian)

"""Typed use of cyad's public API.

tests/test_typing.py type-checks this file with mypy --strict against the installed
stubs (every `assert_type` must hold, every `type: ignore` must be needed) and runs it.
"""
from concurrent.futures import ThreadPoolExecutor
from typing import Any, assert_type

import numpy as np
import numpy.typing as npt

import cyad
import cyad.ipopt

Floats = npt.NDArray[np.floating[Any]]


def residual(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.sin(x) * x**2 + x[::-1]


def objective(x: cyad.Dual) -> cyad.Dual:
    return (x * x).sum() + 1.0


def rhs(y: cyad.Dual, u: cyad.Dual) -> None:
    y[0] = -0.04 * u[0] + 1e4 * u[1] * u[2]
    y[1] = 0.04 * u[0] - 1e4 * u[1] * u[2] - 3e7 * u[1] ** 2
    y[2] = 3e7 * u[1] ** 2


Buffer = npt.NDArray[np.float64]
x: Buffer = np.linspace(0.1, 1.0, 5)
e0: Buffer = np.array([1.0, 0.0, 0.0, 0.0, 0.0])
e1: Buffer = np.array([0.0, 1.0, 0.0, 0.0, 0.0])

# first order: one tangent, a batch of tangents, out= returns the caller's buffer
assert_type(cyad.pushforward(residual, x, e0), Floats | float)
assert_type(cyad.pushforward(residual, x, (e0, e1)), tuple[Floats, ...])
tangent_out: Buffer = np.empty(5)
assert_type(cyad.pushforward(residual, x, e0, out=tangent_out), Buffer)
assert_type(cyad.value_and_pushforward(residual, x, e0), tuple[Floats | float, Floats | float])
assert_type(cyad.value_and_pushforward(residual, x, (e0, e1)),
            tuple[Floats | float, tuple[Floats, ...]])
# pullback: a cotangent shaped like f(x), or a batch of them
assert_type(cyad.pullback(residual, x, e0, engine="tape"), Floats | float)
assert_type(cyad.pullback(residual, x, (e0, e1)), tuple[Floats, ...])
assert_type(cyad.pullback(residual, x, e0, out=tangent_out), Buffer)
assert_type(cyad.value_and_pullback(residual, x, (e0, e1)),
            tuple[Floats | float, tuple[Floats, ...]])
assert_type(cyad.prepare_pullback(residual, x, e0), cyad.Prep)
assert_type(cyad.derivative(np.sin, 0.0), Floats | float)
assert_type(cyad.value_and_derivative(np.sin, 0.0), tuple[Floats | float, Floats | float])
assert_type(cyad.gradient(objective, x), Floats)
value, grad = cyad.value_and_gradient(objective, x)
assert_type(value, float)
pair: tuple[Buffer, Buffer] = (np.empty(()), np.empty(5))
assert_type(cyad.value_and_gradient(objective, x, out=pair), tuple[Buffer, Buffer])
assert_type(cyad.jacobian(residual, x), Floats)
assert_type(cyad.value_and_jacobian(residual, x), tuple[Floats | float, Floats])

# second order
assert_type(cyad.second_derivative(np.sin, 0.0), Floats | float)
assert_type(cyad.value_derivative_and_second_derivative(np.sin, 0.0),
            tuple[Floats | float, Floats | float, Floats | float])
assert_type(cyad.hvp(objective, x, e0), Floats)
assert_type(cyad.hvp(objective, x, (e0, e1)), tuple[Floats, ...])
assert_type(cyad.gradient_and_hvp(objective, x, e0), tuple[Floats, Floats])
assert_type(cyad.hessian(objective, x), Floats)
assert_type(cyad.value_gradient_and_hessian(objective, x), tuple[float, Floats, Floats])

# sparsity patterns (scipy.sparse arrays, untyped)
pattern = cyad.jacobian_sparsity(residual, x, local=True)
nonzeros: int = pattern.nnz + cyad.hessian_sparsity(objective, x).nnz

# sparse Jacobians and Hessians
sparse_prep = cyad.prepare_sparse_jacobian(residual, x, format="csc")
assert_type(sparse_prep, cyad.SparseJacobianPrep)
n_colors: int = sparse_prep.n_colors + cyad.prepare_sparse_hessian(objective, x).n_colors
cyad.sparse_jacobian(residual, x, prep=sparse_prep, out=sparse_prep.new_result())
sparse_value, sparse_jacobian = cyad.value_and_sparse_jacobian(residual, x, coloring="row")
sparse_hessian = cyad.sparse_hessian(objective, x)
sparse_triple = cyad.value_gradient_and_sparse_hessian(objective, x)

# IPOPT's callbacks (cyipopt's names)
callbacks = cyad.ipopt.Callbacks(objective, x, constraints=residual)
structure: tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]] = callbacks.jacobianstructure()
assert_type(callbacks.hessian(x, np.ones(callbacks.m), 1.0), npt.NDArray[np.float64])
assert_type(callbacks.objective(x), float)

# prepared, in-place, two-argument calls
u, y, jacobian_out = np.array([1.0, 0.0, 0.0]), np.zeros(3), np.zeros((3, 3))
prep = cyad.prepare_jacobian(rhs, u, y=y, chunk=3, engine="dual")
assert_type(prep, cyad.Prep)
engine: str = prep.engine
evaluations: int = prep.evaluations
is_python: bool = prep.is_python
shape: tuple[int, ...] = prep.x_shape
cyad.jacobian(rhs, u, y=y, prep=prep, out=jacobian_out, engine="dual")
cyad.value_and_jacobian(rhs, u, y=y, prep=cyad.prepare_value_and_jacobian(rhs, u, y=y))

# a call in parts on threads, and the replay's threads
parts: int = cyad.prepare_hessian(objective, x, workers=2).workers
cyad.jacobian(residual, x, workers=2)
former: int = cyad.set_threads(2)
cyad.set_threads(None)
threads: int = cyad.get_threads()
cyad.hessian(objective, x, prep=cyad.prepare_hessian(objective, x))
chunk: int = cyad.default_chunk(100, 100)

# FunctionWrapper, FunctionError, profiling
wrapper = cyad.FunctionWrapper(residual)
supported: bool = wrapper.supports_float64 and wrapper.supports_second_order_float32
assert_type(wrapper.out_shape, tuple[int, ...] | None)
assert_type(cyad.jacobian(wrapper, x), Floats)
try:
    raise cyad.FunctionError(3)
except cyad.FunctionError as error:
    status: int = error.status
recorded = cyad.record(residual, x)
assert_type(recorded.tape, cyad.TapeFunction | None)
assert_type(cyad.jacobian(recorded, x), Floats)
tape = cyad.record(objective, x).tape
if tape is not None:
    records: int = tape.records
allocations: float = cyad.allocations_per_call(lambda: cyad.jacobian(residual, x), calls=10)
include: str = cyad.get_include()


# custom derivative rules
@cyad.custom_derivative
def cube(v: Buffer) -> Buffer:
    return np.asarray(v) ** 3


@cube.defjvp
def cube_jvp(primals: tuple[Buffer], tangents: tuple[Buffer]) -> tuple[Buffer, Buffer]:
    return cube(primals[0]), 3 * primals[0] ** 2 * tangents[0]


custom: cyad.CustomFunction[[Buffer], Buffer] = cube
assert_type(cube(x), Buffer)
assert_type(cube_jvp((x,), (x,)), tuple[Buffer, Buffer])
assert_type(cyad.gradient(lambda v: np.sum(cube(v)), x, engine="dual"), Floats)


@cyad.custom_derivative(order=1, nondiff_argnames=("k",))
def power(v: Buffer, k: int) -> Buffer:
    return np.asarray(v) ** k


assert_type(power(x, 2), Buffer)

# cyad.scipy: derivative callables for SciPy's solvers (sparse results: scipy.sparse, untyped)
import cyad.scipy  # noqa: E402

scipy_gradient: npt.NDArray[np.float64] = cyad.scipy.gradient(objective)(x)
scipy_value, scipy_g = cyad.scipy.value_and_gradient(objective)(x)
scipy_jacobian: npt.NDArray[np.float64] = cyad.scipy.jacobian(residual, x)(x)
sparse_jacobian_adapter = cyad.scipy.jacobian(residual, sparse=True, coloring="column")
sparse_colors: int = sparse_jacobian_adapter.prep.n_colors if sparse_jacobian_adapter.prep else 0
sparse_nnz: int = sparse_jacobian_adapter(x).nnz + cyad.scipy.hessian(objective, sparse=True)(x).nnz
dense_hessian: npt.NDArray[np.float64] = cyad.scipy.hessian(objective)(x)


def heat(t: float, u: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return -u


ode_pattern_nnz: int = cyad.scipy.ode_jac_sparsity(heat, 0.0, x).nnz
ode_csc = cyad.scipy.ode_jacobian(heat, sparse=True)(0.0, x)
pattern_nnz: int = cyad.scipy.jac_sparsity(residual, x).nnz
constraint_nnz: int = cyad.scipy.constraint_hessian(residual, sparse=True)(x, x).nnz
check = cyad.scipy.check_derivatives(residual, x)
assert_type(check.max_rel_error, float)



# many points: stacked results, on threads or through a map-like
points: Buffer = np.stack([x, 2 * x])
gradients: Floats = cyad.at_points(cyad.gradient, objective, points, workers=2)
values, grads = cyad.at_points("value_and_gradient", objective, points, workers=1)


def on_a_pool(pool: ThreadPoolExecutor) -> Floats:   # a map-like (cloudpickle): not run here
    jacobians: Floats = cyad.at_points(cyad.jacobian, residual, points, workers=pool.map,
                                       tasks=2)
    return jacobians



stacked_out: Buffer = np.empty((2, 5))
assert_type(cyad.at_points(cyad.hvp, objective, points, points, out=stacked_out), Any)

def rejected(d: cyad.Dual) -> None:
    """What the stubs reject (each line raises TypeError or ValueError at run time)."""
    cyad.gradient(objective, x, chunk="8")  # type: ignore[arg-type]
    cyad.jacobian(x, x)  # type: ignore[arg-type]
    cyad.hvp(objective, x)  # type: ignore[call-overload]
    float(d)  # type: ignore[arg-type]
    pow(d, 2, 3)  # type: ignore[call-overload]
    cyad.at_points(cyad.gradient, objective, x, workers="2")  # type: ignore[arg-type]
    cyad.jacobian(residual, x, workers="2")  # type: ignore[arg-type]
    cyad.set_threads("2")  # type: ignore[arg-type]

# Type stubs of cyad/scipy.py: derivative callables for SciPy's solvers.
#
# The dense callables return float64 arrays; the sparse ones (sparse=True) scipy.sparse
# arrays (CSR, or CSC for solve_ivp), typed Any as SciPy ships no type information.
from collections.abc import Callable
from typing import Any, Literal, NamedTuple, overload

import numpy as np
import numpy.typing as npt

from cyad._core import Prep
from cyad._sparse.operators import SparseHessianPrep, SparseJacobianPrep
from cyad._wrapper import _Function

__all__ = [
    "DerivativeCheck",
    "check_derivatives",
    "constraint_hessian",
    "gradient",
    "hessian",
    "hessp",
    "jac_sparsity",
    "jacobian",
    "ode_function",
    "ode_jac_sparsity",
    "ode_jacobian",
    "value_and_gradient",
]

_Float64Array = npt.NDArray[np.float64]

class _Adapter:
    fun: _Function
    chunk: int | None
    engine: str | None
    prep: Any
    def __init__(self, fun: _Function, x0: npt.ArrayLike | None = None,
                 chunk: int | None = None, engine: str | None = None) -> None: ...
    def __call__(self, x: npt.ArrayLike, *args: Any) -> Any: ...

class _Gradient(_Adapter):
    prep: Prep | None
    def __call__(self, x: npt.ArrayLike, *args: Any) -> _Float64Array: ...

class _ValueAndGradient(_Adapter):
    prep: Prep | None
    def __call__(self, x: npt.ArrayLike, *args: Any) -> tuple[float, _Float64Array]: ...

class _Hessian(_Adapter):
    prep: Prep | None
    def __call__(self, x: npt.ArrayLike, *args: Any) -> _Float64Array: ...

class _Hessp(_Adapter):
    prep: Prep | None
    def __call__(self, x: npt.ArrayLike, p: npt.ArrayLike, *args: Any) -> _Float64Array: ...

class _Jacobian(_Adapter):
    prep: Prep | None
    def __call__(self, x: npt.ArrayLike, *args: Any) -> _Float64Array: ...

class _SparseAdapter(_Adapter):
    sparsity: Any
    options: dict[str, Any]
    def __init__(self, fun: _Function, x0: npt.ArrayLike | None, sparsity: Any,
                 engine: str | None, options: dict[str, Any]) -> None: ...

class _SparseJacobian(_SparseAdapter):
    prep: SparseJacobianPrep | None

class _SparseHessian(_SparseAdapter):
    prep: SparseHessianPrep | None

class _ConstraintHessian:
    fun: Callable[..., Any]
    sparse: bool
    sparsity: Any
    chunk: int | None
    prep: Prep | SparseHessianPrep | None
    def __init__(self, fun: Callable[..., Any], x0: npt.ArrayLike | None,
                 v0: npt.ArrayLike | None, sparse: bool, sparsity: Any,
                 chunk: int | None) -> None: ...
    # a float64 array, or with sparse=True a scipy.sparse.csr_array
    def __call__(self, x: npt.ArrayLike, v: npt.ArrayLike) -> Any: ...

class _OdeJacobian:
    fun: Callable[..., Any]
    in_place: bool
    sparse: bool
    sparsity: Any
    coloring: str
    chunk: int | None
    engine: str | None
    prep: Prep | SparseJacobianPrep | None
    def __init__(self, fun: Callable[..., Any], in_place: bool = False,
                 y0: npt.ArrayLike | None = None, chunk: int | None = None,
                 engine: str | None = None, sparse: bool = False, sparsity: Any = None,
                 coloring: str = "auto") -> None: ...
    # a float64 array, or with sparse=True a scipy.sparse.csc_array
    def __call__(self, t: float, y: npt.ArrayLike, *args: Any) -> Any: ...

class _OdeFunction:
    rhs: Callable[..., Any]
    def __init__(self, rhs: Callable[..., Any]) -> None: ...
    def __call__(self, t: float, y: npt.ArrayLike, *args: Any) -> _Float64Array: ...

def gradient(fun: _Function, x0: npt.ArrayLike | None = None, *, chunk: int | None = None,
             engine: str | None = None) -> _Gradient: ...
def value_and_gradient(fun: _Function, x0: npt.ArrayLike | None = None, *,
                       chunk: int | None = None, engine: str | None = None) -> _ValueAndGradient: ...
@overload
def hessian(fun: _Function, x0: npt.ArrayLike | None = None, *, sparse: Literal[False] = False,
            sparsity: None = None, chunk: int | None = None,
            engine: str | None = None) -> _Hessian: ...
@overload
def hessian(fun: _Function, x0: npt.ArrayLike | None = None, *, sparse: Literal[True],
            sparsity: Any = None, chunk: None = None,
            engine: str | None = None) -> _SparseHessian: ...
@overload
def hessian(fun: _Function, x0: npt.ArrayLike | None = None, *, sparse: bool,
            sparsity: Any = None, chunk: int | None = None,
            engine: str | None = None) -> _Hessian | _SparseHessian: ...
def hessp(fun: _Function, x0: npt.ArrayLike | None = None, *, chunk: int | None = None,
          engine: str | None = None) -> _Hessp: ...
@overload
def jacobian(fun: _Function, x0: npt.ArrayLike | None = None, *, sparse: Literal[False] = False,
             sparsity: None = None, coloring: Literal["auto"] = "auto",
             chunk: int | None = None, engine: str | None = None) -> _Jacobian: ...
@overload
def jacobian(fun: _Function, x0: npt.ArrayLike | None = None, *, sparse: Literal[True],
             sparsity: Any = None, coloring: str = "auto", chunk: None = None,
             engine: str | None = None) -> _SparseJacobian: ...
@overload
def jacobian(fun: _Function, x0: npt.ArrayLike | None = None, *, sparse: bool,
             sparsity: Any = None, coloring: str = "auto", chunk: int | None = None,
             engine: str | None = None) -> _Jacobian | _SparseJacobian: ...
def constraint_hessian(fun: Callable[..., Any], x0: npt.ArrayLike | None = None,
                       v0: npt.ArrayLike | None = None, *, sparse: bool = False,
                       sparsity: Any = None, chunk: int | None = None) -> _ConstraintHessian: ...
def ode_jacobian(fun: Callable[..., Any], *, in_place: bool = False,
                 y0: npt.ArrayLike | None = None, sparse: bool = False, sparsity: Any = None,
                 coloring: str = "auto", chunk: int | None = None,
                 engine: str | None = None) -> _OdeJacobian: ...
def ode_function(rhs: Callable[..., Any]) -> _OdeFunction: ...
# scipy.sparse.csr_array of int8 ones
def jac_sparsity(fun: _Function, x0: npt.ArrayLike, args: tuple[Any, ...] = ()) -> Any: ...
def ode_jac_sparsity(fun: Callable[..., Any], t0: float, y0: npt.ArrayLike,
                     args: tuple[Any, ...] = (), *, in_place: bool = False) -> Any: ...

class DerivativeCheck(NamedTuple):
    kind: str
    max_abs_error: float
    max_rel_error: float
    derivative: npt.NDArray[Any]
    approximation: npt.NDArray[Any]

def check_derivatives(
    fun: Callable[..., Any], x: npt.ArrayLike, *,
    kind: Literal["gradient", "jacobian", "hessian"] | None = None, args: tuple[Any, ...] = (),
    derivative: Callable[..., Any] | None = None,
    method: Literal["3-point", "2-point", "cs"] = "3-point", rel_step: float | None = None,
) -> DerivativeCheck: ...

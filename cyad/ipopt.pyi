# Type stubs of cyad/ipopt.py: IPOPT's callbacks (cyipopt's names) from NumPy functions.
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from cyad._sparse.operators import SparseJacobianPrep

__all__ = ["Callbacks", "problem"]

_Floats = npt.NDArray[np.float64]
_Indices = npt.NDArray[np.intp]

class Callbacks:
    n: int
    m: int
    args: tuple[Any, ...]
    jacobian_prep: SparseJacobianPrep | None
    hessian_colors: int
    def __init__(self, objective: Callable[..., Any], x0: npt.ArrayLike,
                 constraints: Callable[..., Any] | None = None, *, args: tuple[Any, ...] = (),
                 hessian: bool = True, engine: str | None = None,
                 jacobian_sparsity: Any = None) -> None: ...
    def objective(self, x: npt.ArrayLike) -> float: ...
    def gradient(self, x: npt.ArrayLike) -> _Floats: ...
    def constraints(self, x: npt.ArrayLike) -> _Floats: ...
    def jacobianstructure(self) -> tuple[_Indices, _Indices]: ...
    def jacobian(self, x: npt.ArrayLike) -> _Floats: ...
    def hessianstructure(self) -> tuple[_Indices, _Indices]: ...
    def hessian(self, x: npt.ArrayLike, lagrange: npt.ArrayLike, obj_factor: float) -> _Floats: ...

# a cyipopt.Problem (cyipopt ships no type information)
def problem(objective: Callable[..., Any], x0: npt.ArrayLike,
            constraints: Callable[..., Any] | None = None, *, args: tuple[Any, ...] = (),
            lb: npt.ArrayLike | None = None,
            ub: npt.ArrayLike | None = None, cl: npt.ArrayLike | None = None,
            cu: npt.ArrayLike | None = None, hessian: bool = True,
            engine: str | None = None, jacobian_sparsity: Any = None) -> Any: ...

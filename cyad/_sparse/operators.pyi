# Type stubs of cyad/_sparse/operators.py: sparse Jacobians and Hessians (compressed evaluation).
from typing import Any

import numpy as np
import numpy.typing as npt

from cyad._wrapper import _Function

FORMATS: tuple[str, ...]
JACOBIAN_COLORINGS: tuple[str, ...]
HESSIAN_COLORINGS: tuple[str, ...]

# the sparse arrays and patterns are scipy.sparse arrays (SciPy ships no type information)
class _SparsePrep:
    sparsity: Any
    coloring: str
    colors: np.ndarray | tuple[np.ndarray, np.ndarray]
    format: str
    shape: tuple[int, int]
    n_colors: int
    def __init__(self, pattern: Any, colors: np.ndarray | tuple[np.ndarray, np.ndarray],
                 coloring: str, parts: list[tuple[np.ndarray, Any, bool]],
                 format: str) -> None: ...
    def new_result(self) -> Any: ...

class SparseJacobianPrep(_SparsePrep):
    out_shape: tuple[int, ...]
    def __init__(self, f: _Function, x: npt.ArrayLike, *args: Any,
                 y: npt.NDArray[Any] | None = None, sparsity: Any = None,
                 coloring: str = "auto", order: str | tuple[str, ...] = "auto",
                 engine: str | None = None, format: str = "csr",
                 workers: Any = None, progress: bool = False) -> None: ...

class SparseHessianPrep(_SparsePrep):
    def __init__(self, f: _Function, x: npt.ArrayLike, *args: Any,
                 y: npt.NDArray[Any] | None = None, sparsity: Any = None, coloring: str = "star",
                 order: str | tuple[str, ...] = "auto", engine: str | None = "tape",
                 format: str = "csr", workers: Any = None, progress: bool = False) -> None: ...

def prepare_sparse_jacobian(f: _Function, x: npt.ArrayLike, *args: Any,
                            y: npt.NDArray[Any] | None = None, sparsity: Any = None,
                            coloring: str = "auto", order: str | tuple[str, ...] = "auto",
                            engine: str | None = None, format: str = "csr",
                            workers: Any = None, progress: bool = False) -> SparseJacobianPrep: ...
def sparse_jacobian(f: _Function, x: npt.ArrayLike, *args: Any, y: npt.NDArray[Any] | None = None,
                    prep: SparseJacobianPrep | None = None, out: Any = None,
                    **options: Any) -> Any: ...
def value_and_sparse_jacobian(f: _Function, x: npt.ArrayLike, *args: Any,
                              y: npt.NDArray[Any] | None = None,
                              prep: SparseJacobianPrep | None = None,
                              out: tuple[npt.NDArray[Any], Any] | None = None,
                              **options: Any) -> tuple[Any, Any]: ...
def prepare_sparse_hessian(f: _Function, x: npt.ArrayLike, *args: Any,
                           y: npt.NDArray[Any] | None = None, sparsity: Any = None,
                           coloring: str = "star", order: str | tuple[str, ...] = "auto",
                           engine: str | None = "tape", format: str = "csr",
                           workers: Any = None, progress: bool = False) -> SparseHessianPrep: ...
def sparse_hessian(f: _Function, x: npt.ArrayLike, *args: Any, y: npt.NDArray[Any] | None = None,
                   prep: SparseHessianPrep | None = None, out: Any = None,
                   **options: Any) -> Any: ...
def value_gradient_and_sparse_hessian(
    f: _Function, x: npt.ArrayLike, *args: Any, y: npt.NDArray[Any] | None = None,
    prep: SparseHessianPrep | None = None,
    out: tuple[npt.NDArray[Any], npt.NDArray[Any], Any] | None = None, **options: Any,
) -> tuple[Any, npt.NDArray[Any], Any]: ...

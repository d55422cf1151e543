from typing import Any

import numpy.typing as npt

from cyad._wrapper import _Function

# scipy.sparse.csr_array (SciPy ships no type information)
def jacobian_sparsity(f: _Function, x: npt.ArrayLike, *, y: npt.NDArray[Any] | None = None, local: bool = False,
                      progress: bool = False) -> Any: ...
def hessian_sparsity(f: _Function, x: npt.ArrayLike, *, y: npt.NDArray[Any] | None = None,
                     progress: bool = False) -> Any: ...
def recorded_pattern(f: _Function, x: npt.ArrayLike, y: npt.NDArray[Any] | None = None,
                     hessian: bool = False, progress: bool = False) -> tuple[Any, Any]: ...

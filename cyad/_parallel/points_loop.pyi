# Type stubs of cyad/_parallel/points_loop.pyx: the compiled loop behind cyad.at_points.
from typing import Any

import numpy as np
import numpy.typing as npt

GRADIENT: int
JACOBIAN: int
HESSIAN: int
HVP: int

def run_rows(
    prep: Any, family: int, z: npt.NDArray[np.floating[Any]],
    v: npt.NDArray[np.floating[Any]] | None, value: npt.NDArray[np.floating[Any]] | None,
    first: npt.NDArray[np.floating[Any]] | None, main: npt.NDArray[np.floating[Any]],
    first_scratch: npt.NDArray[np.floating[Any]] | None,
    main_scratch: npt.NDArray[np.floating[Any]] | None, n_x: int, kept: int, start: int,
    stop: int,
) -> None: ...
def run_blocks(
    preps: list[Any], family: int, z: npt.NDArray[np.floating[Any]],
    v: npt.NDArray[np.floating[Any]] | None, value: npt.NDArray[np.floating[Any]] | None,
    first: npt.NDArray[np.floating[Any]] | None, main: npt.NDArray[np.floating[Any]],
    first_scratches: list[npt.NDArray[np.floating[Any]] | None],
    main_scratches: list[npt.NDArray[np.floating[Any]] | None], n_x: int, kept: int,
    bounds: list[tuple[int, int]],
) -> None: ...

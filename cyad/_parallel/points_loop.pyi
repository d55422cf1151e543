# Type stubs of cyad/_parallel/points_loop.pyx: the compiled loop behind cyad.at_points.
from typing import Any

import numpy as np
import numpy.typing as npt

GRADIENT: int
JACOBIAN: int
HESSIAN: int
HVP: int

def run_rows(
    prep: Any, bound: Any, family: int, z: npt.NDArray[np.floating[Any]],
    v: npt.NDArray[np.floating[Any]] | None, value: npt.NDArray[np.floating[Any]] | None,
    first: npt.NDArray[np.floating[Any]] | None, main: npt.NDArray[np.floating[Any]],
    leaf_offsets: tuple[int, ...], start: int, stop: int,
) -> None: ...
def run_blocks(
    preps: list[Any], bounds: list[Any], family: int, z: npt.NDArray[np.floating[Any]],
    v: npt.NDArray[np.floating[Any]] | None, value: npt.NDArray[np.floating[Any]] | None,
    first: npt.NDArray[np.floating[Any]] | None, main: npt.NDArray[np.floating[Any]],
    leaf_offsets: tuple[int, ...], ranges: list[tuple[int, int]],
) -> None: ...

# Type stubs of cyad/_reporting/profile.pyx: the measurements behind `python -m cyad` and cyad.profiling.
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from cyad._core import Prep
from cyad._wrapper import FunctionWrapper

def count_allocations(fn: Callable[[], object], calls: int) -> int: ...
def copy_function() -> FunctionWrapper: ...
def copy_by_hand(
    x: npt.NDArray[np.float64],
    dx: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    out: npt.NDArray[np.float64],
) -> None: ...
def nogil_copy_times(
    prep: Prep,
    x: npt.NDArray[np.float64],
    dx: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    value: npt.NDArray[np.float64],
    out: npt.NDArray[np.float64],
    operator: str,
    calls: int,
) -> tuple[float, float, float, float]: ...
def empty(
    f: object,
    x: object,
    dx: object,
    *,
    y: object = None,
    prep: object = None,
    out: object = None,
) -> None: ...

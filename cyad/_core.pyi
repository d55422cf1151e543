# Type stubs of cyad/_core.pyx: Prep, the prepared state every operator runs on.
import enum
from typing_extensions import disjoint_base
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from cyad._dual import Dual
from cyad._wrapper import _Function

class Family(enum.IntEnum):
    PUSHFORWARD = 0
    DERIVATIVE = 1
    GRADIENT = 2
    JACOBIAN = 3
    SECOND_DERIVATIVE = 4
    HVP = 5
    HESSIAN = 6

# statuses of the nogil entry points besides 0 and the function's own
PYTHON_ERROR: Final = -1
WRONG_CALL: Final = -2
PREP_BUSY: Final = -3
OVERLAPPING_OUTPUTS: Final = -4
NO_MEMORY: Final = -5

# the default chunk's budgets (see default_chunk)
DEFAULT_PARTIALS_BUDGET: Final = 65536
DEFAULT_C_CHUNK: Final = 8
DEFAULT_SECOND_ORDER_BUDGET: Final = 32768

def default_chunk(directions: int, n_x: int, python: bool = True) -> int: ...
def default_second_order_chunk(
    outer_directions: int, n_x: int, hessian: bool, python: bool = True
) -> int: ...
def input_dtype(x: npt.ArrayLike) -> np.dtype[np.float64] | np.dtype[np.float32]: ...

@disjoint_base
class Prep:
    # made by the prepare_* functions (the constructor's arguments are cyad's own)
    def __init__(
        self,
        family: Family,
        f: _Function,
        x: npt.ArrayLike,
        directions: int,
        y: npt.NDArray[Any] | None = None,
        chunk: int | None = None,
    ) -> None: ...
    @property
    def family(self) -> Family: ...
    @property
    def two_argument(self) -> bool: ...
    @property
    def dtype(self) -> np.dtype[np.float64] | np.dtype[np.float32]: ...
    @property
    def x_shape(self) -> tuple[int, ...]: ...
    @property
    def out_shape(self) -> tuple[int, ...] | None: ...
    @property
    def input_dual(self) -> Dual: ...
    @property
    def n_x(self) -> int: ...
    @property
    def directions(self) -> int: ...
    @property
    def chunk(self) -> int: ...
    @property
    def width(self) -> int: ...
    @property
    def evaluations(self) -> int: ...
    @property
    def is_python(self) -> bool: ...
    def raise_for_status(self, status: int) -> None: ...

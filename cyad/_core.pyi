# Type stubs of cyad/_core.pyx: the engine-neutral Prep and the engine interface.
import enum
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

from cyad._dual.array import Dual
from cyad._wrapper import _Function

class Family(enum.IntEnum):
    PUSHFORWARD = 0
    DERIVATIVE = 1
    GRADIENT = 2
    JACOBIAN = 3
    SECOND_DERIVATIVE = 4
    HVP = 5
    HESSIAN = 6
    PULLBACK = 7

def input_dtype(x: npt.ArrayLike) -> np.dtype[np.float64] | np.dtype[np.float32]: ...

@disjoint_base
class Engine:
    replays_tape: bool
    freezes_state: bool
    @property
    def holds_gil(self) -> bool: ...

@disjoint_base
class Prep:
    # made by the prepare_* functions (the constructor's arguments are cyad's own)
    def __init__(
        self,
        f: _Function,
        x: npt.ArrayLike,
        directions: int,
        y: npt.NDArray[Any] | None = None,
        chunk: int | None = None,
        engine: str | None = None,
    ) -> None: ...
    @property
    def engine_state(self) -> Engine: ...
    @property
    def engine(self) -> str: ...
    @property
    def replays(self) -> bool: ...
    @property
    def holds_gil(self) -> bool: ...
    @property
    def engine_reason(self) -> str: ...
    @property
    def why_engine(self) -> str: ...
    @property
    def engine_made(self) -> str: ...
    @property
    def work(self) -> str: ...
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
    def order(self) -> int: ...
    @property
    def workers(self) -> int: ...
    @property
    def workers_map(self) -> Any: ...
    @property
    def map_options(self) -> tuple[int | None, str | None] | None: ...
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

_FAMILY_NAMES: Final[dict[Family, str]]
_BUSY: Final[str]

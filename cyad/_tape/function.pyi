# Type stubs of cyad/_tape/function.pyx: record and TapeFunction.
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

from cyad._wrapper import FunctionWrapper

def record(
    f: Callable[..., Any], x: npt.ArrayLike, y: npt.NDArray[np.floating[Any]] | None = None,
    *, args: tuple[Any, ...] = ()
) -> FunctionWrapper: ...
@disjoint_base
class TapeFunction:
    def __init__(
        self,
        f: Callable[..., Any],
        x: npt.ArrayLike,
        y: npt.NDArray[np.floating[Any]] | None = None,
        args: tuple[Any, ...] = (),
    ) -> None: ...
    @property
    def f(self) -> Callable[..., Any]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def x_shape(self) -> tuple[int, ...]: ...
    @property
    def out_shape(self) -> tuple[int, ...]: ...
    @property
    def two_argument(self) -> bool: ...
    @property
    def records(self) -> int: ...
    @property
    def bound(self) -> Any: ...
    @property
    def of_x(self) -> Callable[..., Any]: ...
    def set_arguments(self, *args: Any) -> None: ...
    @property
    def programs(self) -> list[tuple[int, int | tuple[int, int], int]]: ...
    def take_error(self) -> BaseException | None: ...
    # (f's tape is a cyad._tape.program.Tape, an untyped internal module)
    def primal(self) -> tuple[Any, list[npt.NDArray[Any]], list[npt.NDArray[Any]]]: ...

# -- internal: the C-level state of a record and of its derived programs -------------------

@disjoint_base
class TapeRecord:
    @property
    def tape(self) -> Any: ...
    @property
    def values(self) -> list[npt.NDArray[Any]]: ...

@disjoint_base
class TapeProgram: ...

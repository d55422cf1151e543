# Type stubs of cyad/_tape/lowering.pyx: a tape lowered for the compiled replay.
from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

from cyad._tape.program import Tape, Var

KIND_CODES: dict[str, int]
COMPARISON_CODES: dict[Any, int]
ALIGNMENT: int
NUMPY_LOOPS: dict[np.dtype[Any], dict[str, dict[str, str]]]
COLUMNS: dict[str, int]
RECIPROCAL_SQUARED: frozenset[tuple[str, str]]
SINE_SHIFTS: dict[tuple[str, str], int]
BLOCK_BYTES: int
BLOCKED_BY: int

def default_block(dtype: npt.DTypeLike) -> int: ...
def slice_aliases(
    tape: Tape, instrs: list[Any], keep: Iterable[Var] | None
) -> tuple[dict[int, tuple[int, int]], set[int]]: ...

@disjoint_base
class Replay:
    def __init__(
        self,
        tape: Tape,
        keep: Iterable[Var] | None = None,
        starts: Iterable[int] = (),
        block: int | None = None,
    ) -> None: ...
    @property
    def tape(self) -> Tape: ...
    @property
    def arena(self) -> npt.NDArray[np.floating[Any]]: ...
    @property
    def n_instr(self) -> int: ...
    @property
    def code(self) -> npt.NDArray[np.int64]: ...
    @property
    def runs(self) -> npt.NDArray[np.int64]: ...
    @property
    def indices(self) -> npt.NDArray[np.int64]: ...
    def offset(self, var: Var) -> int: ...
    def value(self, var: Var) -> npt.NDArray[np.floating[Any]]: ...
    def set_input(self, i: int, array: npt.ArrayLike) -> None: ...
    def run(self, start: int = 0, stop: int | None = None) -> int: ...

# Type stubs of cyad/_tape_engine.pyx: the tape engine.
from typing import Any, Callable, Final

from typing_extensions import disjoint_base

from cyad._prep import Engine

RECORD_LIMIT: Final = 8
CACHE_LIMIT: Final[int]
BY_ROWS: int
BY_ROWS_PYTHON: int
HESSIAN_ALL_LANES: Final = 64
HESSIAN_LANES: Final = 8
REVERSE_LANE_NUMBERS: Final = 1024
PREPARE: dict[Any, Callable[..., Any]]

class TapeLimit(RuntimeError): ...

@disjoint_base
class TapeEngine(Engine):
    @property
    def directions(self) -> int: ...
    @property
    def chunk(self) -> int: ...
    @property
    def width(self) -> int: ...
    @property
    def is_python(self) -> bool: ...
    @property
    def input_dual(self) -> None: ...
    @property
    def evaluations(self) -> int: ...
    @property
    def records(self) -> int: ...
    @property
    def value_checks(self) -> int: ...
    @property
    def tape(self) -> Any: ...
    @property
    def primal(self) -> Any: ...
    @property
    def forward_calls(self) -> int: ...
    @property
    def delegated(self) -> bool: ...

# Type stubs of cyad/_dual/engine.pyx: the dual engine and its default chunks.
from typing import Final

from typing_extensions import disjoint_base

from cyad._dual.array import Dual
from cyad._core import Engine

# the default chunk's budgets (see default_chunk)
DEFAULT_PARTIALS_BUDGET: Final = 65536
DEFAULT_C_CHUNK: Final = 8
DEFAULT_SECOND_ORDER_BUDGET: Final = 32768

def default_chunk(directions: int, n_x: int, python: bool = True) -> int: ...
def default_second_order_chunk(
    outer_directions: int, n_x: int, hessian: bool, python: bool = True
) -> int: ...

@disjoint_base
class DualEngine(Engine):
    @property
    def input_dual(self) -> Dual: ...
    @property
    def directions(self) -> int: ...
    @property
    def chunk(self) -> int: ...
    @property
    def width(self) -> int: ...
    @property
    def is_python(self) -> bool: ...
    @property
    def evaluations(self) -> int: ...

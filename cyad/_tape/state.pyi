# Type stubs of cyad/_tape/state.pyx: the Python state a default tape checks.
from typing import Any, Callable

from typing_extensions import disjoint_base

DEPTH: int
BUDGET: int

@disjoint_base
class PythonState:
    def __init__(self, f: Callable[..., Any]) -> None: ...
    def changed(self) -> bool: ...
    @property
    def arrays(self) -> list[Any]: ...
    @property
    def complete(self) -> bool: ...
    @property
    def reads(self) -> int: ...
    @property
    def what_changed(self) -> str | None: ...

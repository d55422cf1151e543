from typing import Any, Callable

import numpy as np
from typing_extensions import disjoint_base

@disjoint_base
class LeafSource: ...

@disjoint_base
class Bound:
    function: Callable[..., Any]
    @property
    def leaves(self) -> tuple[np.ndarray, ...]: ...
    shapes: tuple[tuple[int, ...], ...]
    dtype: np.dtype[Any]
    count: int
    per_row: bool
    def __init__(self, function: Callable[..., Any], leaves: tuple[Any, ...],
                 dtype: Any) -> None: ...
    def set(self, leaves: tuple[Any, ...]) -> bool: ...
    def per_rows(self) -> None: ...
    def __call__(self, *arguments: Any) -> Any: ...

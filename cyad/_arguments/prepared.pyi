from typing import Any

from typing_extensions import disjoint_base

from cyad._arguments.bound import LeafSource

@disjoint_base
class Walk:
    supported: bool
    def __init__(self, roots: tuple[Any, ...]) -> None: ...

@disjoint_base
class PreparedCall(LeafSource):
    supported: bool
    def __init__(self, f: Any, argnums: Any, flat: bool, bound: Any, inner: Any, problem: Any,
                 arguments: Any, x_flat: Any, lock: Any) -> None: ...

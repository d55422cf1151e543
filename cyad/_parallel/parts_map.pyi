# Type stubs of cyad/_parallel/parts_map.py: an operator's call in parts through a map-like.
from typing import Any

SENTINEL: dict[Any, Any]

def run_task(task: tuple[Any, ...]) -> tuple[Any, Any, Any, Any]: ...
def call(prep: Any, f: Any, x: Any, v: Any, y: Any, out: Any, wanted: int) -> Any: ...

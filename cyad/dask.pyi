# Type stubs of cyad/dask.py: derivatives at the rows of a Dask array (dask ships its own
# types; the results are dask.array.Array).
from collections.abc import Callable
from typing import Any

__all__ = ["gradient", "hessian", "jacobian"]

def gradient(
    f: Callable[..., Any], points: Any, *, chunk: int | None = None, engine: str | None = None,
) -> Any: ...
def jacobian(
    f: Callable[..., Any], points: Any, *, out_shape: tuple[int, ...] | None = None,
    chunk: int | None = None, engine: str | None = None,
) -> Any: ...
def hessian(
    f: Callable[..., Any], points: Any, *, chunk: int | None = None, engine: str | None = None,
) -> Any: ...

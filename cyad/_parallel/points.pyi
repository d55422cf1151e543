# Type stubs of cyad/_parallel/points.py: cyad.at_points. Results are float64 or float32 arrays (the
# points' dtype) with a first axis of points; value_and_* forms return tuples; with out=, out.
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from cyad._wrapper import _Function

_Array: TypeAlias = npt.NDArray[np.floating[Any]]
_Map: TypeAlias = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any] | Iterator[Any]]

def at_points(
    operator: Callable[..., Any] | str, f: _Function, points: npt.ArrayLike,
    v: npt.ArrayLike | None = None, *, args: tuple[npt.ArrayLike, ...] = (),
    workers: int | _Map | None = None, tasks: int | None = None,
    out: npt.NDArray[Any] | tuple[npt.NDArray[Any], ...] | None = None,
    chunk: int | None = None, engine: str | None = None, progress: bool = False,
) -> Any: ...
def run_task(
    task: tuple[bytes, _Array, _Array | None],
) -> tuple[_Array | None, _Array | None, _Array]: ...
def payload_of(problem: Any) -> bytes: ...

import contextlib
from collections.abc import Callable
from typing import Any

CONVERSIONS: dict[str, Callable[..., Any]]

class through_asarray(contextlib.ContextDecorator):
    def __enter__(self) -> through_asarray: ...
    def __exit__(self, *exception: object) -> None: ...

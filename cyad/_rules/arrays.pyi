# Type stubs of cyad/_rules/arrays.pyx: the rule table's columns over arrays.
from typing import Any

import numpy as np

UNARY_COLUMNS: dict[str, int]
BINARY_COLUMNS: dict[str, int]

def unary_column(kind: str, op: int, a: Any) -> np.ndarray: ...
def binary_column(kind: str, op: int, a: Any, b: Any) -> np.ndarray: ...

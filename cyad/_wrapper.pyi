# Type stubs of cyad/_wrapper.pyx: FunctionWrapper and FunctionError.
import sys
from collections.abc import Callable, Iterable
from typing_extensions import disjoint_base
from typing import Any, Final, TypeAlias

import numpy as np
import numpy.typing as npt

from cyad._dual.array import Dual
from cyad._tape.function import TapeFunction

# The C signatures a FunctionWrapper accepts (first and second order, float64 and float32).
F64_SIGNATURE: Final[str]
F32_SIGNATURE: Final[str]
SECOND_F64_SIGNATURE: Final[str]
SECOND_F32_SIGNATURE: Final[str]

# What the operators differentiate: a Python callable, a FunctionWrapper, or (typed where
# Python has a type for it) a C-level function object; ctypes and cffi function pointers and
# numba cfuncs are callables. A scipy.LowLevelCallable goes through FunctionWrapper.
if sys.version_info >= (3, 13):
    from types import CapsuleType

    _Function: TypeAlias = Callable[..., Any] | FunctionWrapper | CapsuleType
else:
    _Function: TypeAlias = Callable[..., Any] | FunctionWrapper

class FunctionError(RuntimeError):
    status: int
    def __init__(self, status: int) -> None: ...

@disjoint_base
class FunctionWrapper:
    # functions: one Python callable, another FunctionWrapper, or up to four C-level function
    # objects (PyCapsule, scipy.LowLevelCallable, ctypes or cffi function pointer, numba cfunc);
    # capsules and LowLevelCallable have no common public type, hence object
    def __init__(
        self,
        *functions: object,
        user_data: object = None,
        out_shape: int | Iterable[int] | None = None,
    ) -> None: ...
    @property
    def callable(self) -> Callable[..., Any] | None: ...
    @property
    def out_shape(self) -> tuple[int, ...] | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def tape(self) -> TapeFunction | None: ...
    @property
    def supports_float64(self) -> bool: ...
    @property
    def supports_float32(self) -> bool: ...
    @property
    def supports_second_order_float64(self) -> bool: ...
    @property
    def supports_second_order_float32(self) -> bool: ...

# -- internal: the binding of a Python callable to a prep's dual arrays ----------------------

@disjoint_base
class PythonFunction:
    def __init__(self, f: Callable[..., Any], two_argument: bool, x_dual: Dual) -> None: ...
    @property
    def error(self) -> BaseException | None: ...

def is_python_function(f: object) -> bool: ...
def is_c_function(f: object) -> bool: ...
class ComplexValues(TypeError): ...

def constant_result(r: object) -> npt.NDArray[np.bool_ | np.integer[Any] | np.floating[Any]]: ...

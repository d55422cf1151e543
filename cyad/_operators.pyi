# Type stubs of cyad/_operators.pyx: the public operators and their prepare_* functions.
#
# Results are float64 or float32 arrays (x's dtype), and Python floats where a result is
# 0-d and no out= was given. (Complex x, or an f of complex values, gives complex results
# and a prep of its own kind, cyad/_complex/operators.py: the stubs type the real calls.)
# A tuple of tangents (pushforward, hvp) or cotangents (pullback) is a batch, answered by
# a tuple. With out=, the operators return out itself. Called inside
# a function cyad is differentiating (nested differentiation), the first-order operators
# return Dual arrays. f may take more than x (f(x, *args)), with argnums= choosing the
# arguments differentiated, has_aux=True, and x a container (tuple, list, dict, namedtuple):
# those results take the structures of x and of f's value (cyad/_arguments/operators.py),
# typed here as the one-array calls' (Any for x and args).
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias, TypeVar, overload

import numpy as np
import numpy.typing as npt

from cyad._core import Prep
from cyad._wrapper import _Function

_Array: TypeAlias = npt.NDArray[np.floating[Any]]
_Result: TypeAlias = _Array | float
_Scalar: TypeAlias = float | np.floating[Any] | np.integer[Any] | npt.NDArray[Any]
_Batch: TypeAlias = tuple[npt.ArrayLike, ...]
_Y: TypeAlias = npt.NDArray[Any] | None
_Chunk: TypeAlias = int | np.integer[Any] | None
_Engine: TypeAlias = str | None
# a count of threads, or a map-like map(func, iterable) running the parts as tasks
_Workers: TypeAlias = int | Callable[[Callable[[Any], Any], list[Any]], Iterable[Any]] | None
_Argnums: TypeAlias = int | tuple[int, ...]
_X: TypeAlias = Any   # an array_like, or a container of them (a pytree)
_Out = TypeVar("_Out", bound=npt.NDArray[Any])
_Outs = TypeVar("_Outs", bound=tuple[Any, ...])

# -- pushforward

def prepare_pushforward(
    f: _Function, x: _X, dx: npt.ArrayLike | _Batch, *args: Any, y: _Y = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> Prep: ...
@overload
def pushforward(
    f: _Function, x: _X, dx: _Batch, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: tuple[npt.NDArray[Any], ...] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Array, ...]: ...
@overload
def pushforward(
    f: _Function, x: _X, dx: npt.ArrayLike, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Result: ...
@overload
def pushforward(
    f: _Function, x: _X, dx: npt.ArrayLike, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: _Out, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Out: ...
@overload
def value_and_pushforward(
    f: _Function, x: _X, dx: _Batch, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Result, tuple[_Array, ...]]: ...
@overload
def value_and_pushforward(
    f: _Function, x: _X, dx: npt.ArrayLike, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Result, _Result]: ...
@overload
def value_and_pushforward(
    f: _Function, x: _X, dx: npt.ArrayLike | _Batch, *args: Any, y: _Y = None,
    prep: Prep | None = None, out: _Outs, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Outs: ...

# -- pullback (dy shaped like f(x); the results like x)

def prepare_pullback(
    f: _Function, x: _X, dy: npt.ArrayLike | _Batch, *args: Any, y: _Y = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> Prep: ...
@overload
def pullback(
    f: _Function, x: _X, dy: _Batch, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: tuple[npt.NDArray[Any], ...] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Array, ...]: ...
@overload
def pullback(
    f: _Function, x: _X, dy: npt.ArrayLike, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Result: ...
@overload
def pullback(
    f: _Function, x: _X, dy: npt.ArrayLike, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: _Out, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Out: ...
@overload
def value_and_pullback(
    f: _Function, x: _X, dy: _Batch, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Result, tuple[_Array, ...]]: ...
@overload
def value_and_pullback(
    f: _Function, x: _X, dy: npt.ArrayLike, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Result, _Result]: ...
@overload
def value_and_pullback(
    f: _Function, x: _X, dy: npt.ArrayLike | _Batch, *args: Any, y: _Y = None,
    prep: Prep | None = None, out: _Outs, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Outs: ...

# -- derivative (scalar x)

def prepare_derivative(
    f: _Function, x: _Scalar, *args: Any, y: _Y = None, chunk: _Chunk = None,
    engine: _Engine = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> Prep: ...
@overload
def derivative(
    f: _Function, x: _Scalar, *args: Any, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Result: ...
@overload
def derivative(
    f: _Function, x: _Scalar, *args: Any, y: _Y = None, prep: Prep | None = None, out: _Out,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Out: ...
@overload
def value_and_derivative(
    f: _Function, x: _Scalar, *args: Any, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Result, _Result]: ...
@overload
def value_and_derivative(
    f: _Function, x: _Scalar, *args: Any, y: _Y = None, prep: Prep | None = None, out: _Outs,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Outs: ...

# -- gradient (scalar-valued f)

def prepare_gradient(
    f: _Function, x: _X, *args: Any, y: _Y = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> Prep: ...
def gradient(
    f: _Function, x: _X, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: npt.NDArray[Any] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Array: ...
@overload
def value_and_gradient(
    f: _Function, x: _X, *args: Any, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[float, _Array]: ...
@overload
def value_and_gradient(
    f: _Function, x: _X, *args: Any, y: _Y = None, prep: Prep | None = None, out: _Outs,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Outs: ...

# -- jacobian

def prepare_jacobian(
    f: _Function, x: _X, *args: Any, y: _Y = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False, flat: bool = False,
) -> Prep: ...
def jacobian(
    f: _Function, x: _X, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: npt.NDArray[Any] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False, flat: bool = False,
) -> _Array: ...
@overload
def value_and_jacobian(
    f: _Function, x: _X, *args: Any, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False, flat: bool = False,
) -> tuple[_Result, _Array]: ...
@overload
def value_and_jacobian(
    f: _Function, x: _X, *args: Any, y: _Y = None, prep: Prep | None = None, out: _Outs,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False, flat: bool = False,
) -> _Outs: ...

# -- second derivative (scalar x)

def prepare_second_derivative(
    f: _Function, x: _Scalar, *args: Any, y: _Y = None, chunk: _Chunk = None,
    engine: _Engine = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> Prep: ...
@overload
def second_derivative(
    f: _Function, x: _Scalar, *args: Any, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Result: ...
@overload
def second_derivative(
    f: _Function, x: _Scalar, *args: Any, y: _Y = None, prep: Prep | None = None, out: _Out,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Out: ...
@overload
def value_derivative_and_second_derivative(
    f: _Function, x: _Scalar, *args: Any, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Result, _Result, _Result]: ...
@overload
def value_derivative_and_second_derivative(
    f: _Function, x: _Scalar, *args: Any, y: _Y = None, prep: Prep | None = None, out: _Outs,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Outs: ...

# -- Hessian-vector product (scalar-valued f)

def prepare_hvp(
    f: _Function, x: _X, v: npt.ArrayLike | _Batch, *args: Any, y: _Y = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> Prep: ...
@overload
def hvp(
    f: _Function, x: _X, v: _Batch, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: tuple[npt.NDArray[Any], ...] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Array, ...]: ...
@overload
def hvp(
    f: _Function, x: _X, v: npt.ArrayLike, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: npt.NDArray[Any] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> _Array: ...
@overload
def gradient_and_hvp(
    f: _Function, x: _X, v: _Batch, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: tuple[npt.NDArray[Any], tuple[npt.NDArray[Any], ...]] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Array, tuple[_Array, ...]]: ...
@overload
def gradient_and_hvp(
    f: _Function, x: _X, v: npt.ArrayLike, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: tuple[npt.NDArray[Any], npt.NDArray[Any]] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False,
) -> tuple[_Array, _Array]: ...

# -- Hessian (scalar-valued f)

def prepare_hessian(
    f: _Function, x: _X, *args: Any, y: _Y = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False, flat: bool = False,
) -> Prep: ...
def hessian(
    f: _Function, x: _X, *args: Any, y: _Y = None, prep: Prep | None = None,
    out: npt.NDArray[Any] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False, flat: bool = False,
) -> _Array: ...
@overload
def value_gradient_and_hessian(
    f: _Function, x: _X, *args: Any, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False, flat: bool = False,
) -> tuple[float, _Array, _Array]: ...
@overload
def value_gradient_and_hessian(
    f: _Function, x: _X, *args: Any, y: _Y = None, prep: Prep | None = None, out: _Outs,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
    argnums: _Argnums = 0, has_aux: bool = False, flat: bool = False,
) -> _Outs: ...

# each family's operators by what they return besides the result, and its prepare_* function
OPERATORS: dict[str, dict[int, Callable[..., Any]]]
PREPARE: dict[str, Callable[..., Any]]

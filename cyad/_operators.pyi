# Type stubs of cyad/_operators.pyx: the public operators and their prepare_* functions.
#
# Results are float64 or float32 arrays (x's dtype), and Python floats where a result is
# 0-d and no out= was given. (Complex x, or an f of complex values, gives complex results
# and a prep of its own kind, cyad/_complex/operators.py: the stubs type the real calls.)
# A tuple of tangents (pushforward, hvp) or cotangents (pullback) is a batch, answered by
# a tuple. With out=, the operators return out itself. Called inside
# a function cyad is differentiating (nested differentiation), the first-order operators
# return Dual arrays.
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
_Out = TypeVar("_Out", bound=npt.NDArray[Any])
_Outs = TypeVar("_Outs", bound=tuple[Any, ...])

# -- pushforward

def prepare_pushforward(
    f: _Function, x: npt.ArrayLike, dx: npt.ArrayLike | _Batch, *, y: _Y = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
) -> Prep: ...
@overload
def pushforward(
    f: _Function, x: npt.ArrayLike, dx: _Batch, *, y: _Y = None, prep: Prep | None = None,
    out: tuple[npt.NDArray[Any], ...] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> tuple[_Array, ...]: ...
@overload
def pushforward(
    f: _Function, x: npt.ArrayLike, dx: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> _Result: ...
@overload
def pushforward(
    f: _Function, x: npt.ArrayLike, dx: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: _Out, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> _Out: ...
@overload
def value_and_pushforward(
    f: _Function, x: npt.ArrayLike, dx: _Batch, *, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> tuple[_Result, tuple[_Array, ...]]: ...
@overload
def value_and_pushforward(
    f: _Function, x: npt.ArrayLike, dx: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> tuple[_Result, _Result]: ...
@overload
def value_and_pushforward(
    f: _Function, x: npt.ArrayLike, dx: npt.ArrayLike | _Batch, *, y: _Y = None,
    prep: Prep | None = None, out: _Outs, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> _Outs: ...

# -- pullback (dy shaped like f(x); the results like x)

def prepare_pullback(
    f: _Function, x: npt.ArrayLike, dy: npt.ArrayLike | _Batch, *, y: _Y = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
) -> Prep: ...
@overload
def pullback(
    f: _Function, x: npt.ArrayLike, dy: _Batch, *, y: _Y = None, prep: Prep | None = None,
    out: tuple[npt.NDArray[Any], ...] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> tuple[_Array, ...]: ...
@overload
def pullback(
    f: _Function, x: npt.ArrayLike, dy: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> _Result: ...
@overload
def pullback(
    f: _Function, x: npt.ArrayLike, dy: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: _Out, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> _Out: ...
@overload
def value_and_pullback(
    f: _Function, x: npt.ArrayLike, dy: _Batch, *, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> tuple[_Result, tuple[_Array, ...]]: ...
@overload
def value_and_pullback(
    f: _Function, x: npt.ArrayLike, dy: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> tuple[_Result, _Result]: ...
@overload
def value_and_pullback(
    f: _Function, x: npt.ArrayLike, dy: npt.ArrayLike | _Batch, *, y: _Y = None,
    prep: Prep | None = None, out: _Outs, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
) -> _Outs: ...

# -- derivative (scalar x)

def prepare_derivative(
    f: _Function, x: _Scalar, *, y: _Y = None, chunk: _Chunk = None,
    engine: _Engine = None,
    holomorphic: bool = False,
) -> Prep: ...
@overload
def derivative(
    f: _Function, x: _Scalar, *, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
) -> _Result: ...
@overload
def derivative(
    f: _Function, x: _Scalar, *, y: _Y = None, prep: Prep | None = None, out: _Out,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
) -> _Out: ...
@overload
def value_and_derivative(
    f: _Function, x: _Scalar, *, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
) -> tuple[_Result, _Result]: ...
@overload
def value_and_derivative(
    f: _Function, x: _Scalar, *, y: _Y = None, prep: Prep | None = None, out: _Outs,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
) -> _Outs: ...

# -- gradient (scalar-valued f)

def prepare_gradient(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> Prep: ...
def gradient(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: npt.NDArray[Any] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> _Array: ...
@overload
def value_and_gradient(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> tuple[float, _Array]: ...
@overload
def value_and_gradient(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None, out: _Outs,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> _Outs: ...

# -- jacobian

def prepare_jacobian(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> Prep: ...
def jacobian(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: npt.NDArray[Any] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> _Array: ...
@overload
def value_and_jacobian(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> tuple[_Result, _Array]: ...
@overload
def value_and_jacobian(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None, out: _Outs,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> _Outs: ...

# -- second derivative (scalar x)

def prepare_second_derivative(
    f: _Function, x: _Scalar, *, y: _Y = None, chunk: _Chunk = None,
    engine: _Engine = None,
    holomorphic: bool = False,
) -> Prep: ...
@overload
def second_derivative(
    f: _Function, x: _Scalar, *, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
) -> _Result: ...
@overload
def second_derivative(
    f: _Function, x: _Scalar, *, y: _Y = None, prep: Prep | None = None, out: _Out,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
) -> _Out: ...
@overload
def value_derivative_and_second_derivative(
    f: _Function, x: _Scalar, *, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
) -> tuple[_Result, _Result, _Result]: ...
@overload
def value_derivative_and_second_derivative(
    f: _Function, x: _Scalar, *, y: _Y = None, prep: Prep | None = None, out: _Outs,
    chunk: _Chunk = None, engine: _Engine = None,
    holomorphic: bool = False,
) -> _Outs: ...

# -- Hessian-vector product (scalar-valued f)

def prepare_hvp(
    f: _Function, x: npt.ArrayLike, v: npt.ArrayLike | _Batch, *, y: _Y = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> Prep: ...
@overload
def hvp(
    f: _Function, x: npt.ArrayLike, v: _Batch, *, y: _Y = None, prep: Prep | None = None,
    out: tuple[npt.NDArray[Any], ...] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> tuple[_Array, ...]: ...
@overload
def hvp(
    f: _Function, x: npt.ArrayLike, v: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: npt.NDArray[Any] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> _Array: ...
@overload
def gradient_and_hvp(
    f: _Function, x: npt.ArrayLike, v: _Batch, *, y: _Y = None, prep: Prep | None = None,
    out: tuple[npt.NDArray[Any], tuple[npt.NDArray[Any], ...]] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> tuple[_Array, tuple[_Array, ...]]: ...
@overload
def gradient_and_hvp(
    f: _Function, x: npt.ArrayLike, v: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: tuple[npt.NDArray[Any], npt.NDArray[Any]] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> tuple[_Array, _Array]: ...

# -- Hessian (scalar-valued f)

def prepare_hessian(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> Prep: ...
def hessian(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None,
    out: npt.NDArray[Any] | None = None, chunk: _Chunk = None,
    engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> _Array: ...
@overload
def value_gradient_and_hessian(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None, out: None = None,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> tuple[float, _Array, _Array]: ...
@overload
def value_gradient_and_hessian(
    f: _Function, x: npt.ArrayLike, *, y: _Y = None, prep: Prep | None = None, out: _Outs,
    chunk: _Chunk = None, engine: _Engine = None, workers: _Workers = None,
    holomorphic: bool = False,
) -> _Outs: ...

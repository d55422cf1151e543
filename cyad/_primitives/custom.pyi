from typing import Any, Callable, Generic, ParamSpec, TypeVar, overload

from cyad._primitives._table import Constant, Primitive

_P = ParamSpec("_P")
_R = TypeVar("_R")
_Rule = TypeVar("_Rule", bound=Callable[..., Any])

class CustomEntry(Primitive):
    engine_handlers: dict[str, Any]
    def __init__(self, name: str, namespace: dict[str, Any]) -> None: ...

class ValueOnlyEntry(Constant):
    engine_handlers: dict[str, Any]
    def __init__(self, name: str, namespace: dict[str, Any]) -> None: ...

class ValueOnlyFunction(Generic[_P, _R]):
    fun: Callable[_P, _R]
    def __init__(self, fun: Callable[_P, _R]) -> None: ...
    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...

class EntryFunction:
    fun: Callable[..., Any]
    def __init__(self, entry: Any, bind: Callable[..., Any] | None = None) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

def value_only(fun: Callable[_P, _R]) -> ValueOnlyFunction[_P, _R]: ...

class CustomFunction(Generic[_P, _R]):
    fun: Callable[_P, _R]
    order: int | None
    lanes: bool
    check: bool
    jvp_rule: Callable[..., Any] | None
    vjp_rule: Callable[..., Any] | None
    operand_names: tuple[str, ...]
    def __init__(self, fun: Callable[_P, _R], *, order: int | None = None,
                 nondiff_argnames: str | tuple[str, ...] = (), lanes: bool = False,
                 check: bool = False,
                 rule_of: tuple[CustomFunction[..., Any], str] | None = None) -> None: ...
    def defjvp(self, rule: _Rule) -> _Rule: ...
    def defvjp(self, rule: _Rule) -> _Rule: ...
    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...
    def __get__(self, instance: object, owner: type | None = None) -> Any: ...

@overload
def custom_derivative(fun: Callable[_P, _R], *, order: int | None = None,
                      nondiff_argnames: str | tuple[str, ...] = (),
                      lanes: bool = False, check: bool = False) -> CustomFunction[_P, _R]: ...
@overload
def custom_derivative(fun: None = None, *, order: int | None = None,
                      nondiff_argnames: str | tuple[str, ...] = (), lanes: bool = False,
                      check: bool = False) -> Callable[[Callable[_P, _R]], CustomFunction[_P, _R]]: ...

# Type stubs of cyad/_families.pyx: the prep of each operator family.
from typing import Any, Final

import numpy.typing as npt

from cyad._core import Family, Prep
from cyad._wrapper import _Function

class PushforwardPrep(Prep):
    def __init__(
        self,
        f: _Function,
        x: npt.ArrayLike,
        v: npt.ArrayLike | tuple[npt.ArrayLike, ...] | None = None,
        y: npt.NDArray[Any] | None = None,
        chunk: int | None = None,
        engine: str | None = None,
    ) -> None: ...
class DerivativePrep(PushforwardPrep): ...
class PullbackPrep(Prep):
    def __init__(
        self,
        f: _Function,
        x: npt.ArrayLike,
        v: npt.ArrayLike | tuple[npt.ArrayLike, ...] | None = None,
        y: npt.NDArray[Any] | None = None,
        chunk: int | None = None,
        engine: str | None = None,
    ) -> None: ...
class JacobianPrep(Prep):
    def __init__(
        self,
        f: _Function,
        x: npt.ArrayLike,
        v: npt.ArrayLike | tuple[npt.ArrayLike, ...] | None = None,
        y: npt.NDArray[Any] | None = None,
        chunk: int | None = None,
        engine: str | None = None,
    ) -> None: ...
class GradientPrep(JacobianPrep): ...
class SecondDerivativePrep(Prep):
    def __init__(
        self,
        f: _Function,
        x: npt.ArrayLike,
        v: npt.ArrayLike | tuple[npt.ArrayLike, ...] | None = None,
        y: npt.NDArray[Any] | None = None,
        chunk: int | None = None,
        engine: str | None = None,
    ) -> None: ...
class _ScalarSecondOrderPrep(Prep):
    def __init__(
        self,
        f: _Function,
        x: npt.ArrayLike,
        v: npt.ArrayLike | tuple[npt.ArrayLike, ...] | None = None,
        y: npt.NDArray[Any] | None = None,
        chunk: int | None = None,
        engine: str | None = None,
    ) -> None: ...
class HvpPrep(_ScalarSecondOrderPrep): ...
class HessianPrep(_ScalarSecondOrderPrep): ...

PREP_TYPES: Final[dict[Family, type[Prep]]]

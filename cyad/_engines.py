"""The engines a prep can run on: the one registry of them, and the one owner of the choice.

An engine is a module providing an `Engine` subclass (cyad/_core.pxd): the buffers and
function binding behind a prep's handle and its nogil call for each operator family.
`prepare_*` and the operators take ``engine=``; without it, `default_engine` chooses (and
says why), and `default_text` says the same rule in each operator's docstring. Callers ask
an engine what it can do (`Engine.replays_tape`, a prep's `replays` and `holds_gil`), never
its name. Adding an engine is a module and its row here.
"""
import importlib
import textwrap
from typing import Any

# name: (module, Engine subclass)
ENGINES = {
    "dual": ("cyad._dual.engine", "DualEngine"),
    "tape": ("cyad._tape.engine", "TapeEngine"),
}
# the engine of a prep made without engine= where `default_engine` does not choose (a prep
# made by its class), and the one a tape hands f to when it cannot record it
FALLBACK = "dual"
RECORDING = "tape"

# The default engine. The tape replays a prepared call of a Python f (and answers any f it
# cannot trace by the dual engine), in reverse mode 10 to 100 times faster than the dual
# engine evaluates f, and in forward mode too (measured side by side, prepared calls, dual
# / tape: the JVP of sin(x) exp(-x**2) + x**3 5.7 at n = 10, 5.0 at 10**4, 14 at 10**5,
# 10 at 10**6; the Jacobian of tanh(A @ x) + x**2 17 at 10, 8.8 at 100, 98 at 1000; the
# sparse Jacobian of Broyden's function 1.6 at 100, 3.0 at 10**4, 2.6 at 10**5; a derivative
# and second derivative of a scalar 3.7 and 2.6, of a sum over 1 000 points 5.5 and 4.4):
# it is the default of every prepared call of a Python f. A call without prep= records f
# every time (0.3 ms for that JVP, 0.4 ms for Rosenbrock's gradient, 0.8 ms for its hvp or
# Hessian): there the tape is the default only for reverse mode, from these sizes of x,
# where the dual engine's call costs more (measured side by side, tape / dual for one
# unprepared call of Rosenbrock: gradient 1.7 at n = 176, 0.87 at 192; hvp 1.2 at 256,
# 0.83 at 320; Hessian 1.1 at 80, 0.69 at 96; an MLP's gradient of 4 456 parameters
# 2.2 ms against 13 s); in forward mode it stays dearer (an unprepared JVP: 21x the dual
# engine's at n = 10, 1.1x at 10**4). asv_bench/benchmarks/tape.py (Recording: a prepare
# and its first call) re-measures the crossings.
TAPE_FROM = {"gradient": 192, "pullback": 192, "hvp": 320, "hessian": 96}


def engine_type(name: str | None) -> Any:
    """The Engine subclass of the engine called `name` (None: the fallback's)."""
    if name is None:
        name = FALLBACK
    try:
        module, cls = ENGINES[name]
    except (KeyError, TypeError):
        raise ValueError(f"cyad: unknown engine {name!r}; the engines are "
                         f"{', '.join(map(repr, ENGINES))}") from None
    return getattr(importlib.import_module(module), cls)


def default_engine(family: str, recorded: bool, python: bool, size: int,
                   one_shot: bool) -> tuple[str, str]:
    """The engine of an operator family's prep made without engine=, and why.

    recorded: f is a recorded function (cyad.record); python: f is a Python callable;
    size: the elements of x; one_shot: the prep is for one call (no prep= given).
    """
    if recorded:
        if family in TAPE_FROM:
            return RECORDING, (f"chosen by default: f is a recorded function, its {family} "
                               "a replay")
        return FALLBACK, (f"chosen by default: f is a recorded function, whose {family} "
                          "evaluates its compiled derivative programs")
    if not python:
        return FALLBACK, "chosen by default: a C function runs on the dual engine"
    if family not in TAPE_FROM:
        if one_shot:
            return FALLBACK, (f"chosen by default: a {family} without prep= evaluates f "
                              "once per chunk of directions, where recording a tape costs "
                              "more")
        return RECORDING, (f"chosen by default: a prepared {family} of a Python f replays "
                           "a tape (forward mode) without evaluating f")
    if one_shot and size < TAPE_FROM[family]:
        return FALLBACK, (f"chosen by default: a {family} without prep= of fewer than "
                          f"{TAPE_FROM[family]} elements, where recording a tape costs more")
    return RECORDING, (f"chosen by default: a {family} of a Python f replays a tape "
                       "(reverse mode) without evaluating f")


def default_text(family: str) -> str:
    """`default_engine`'s rule for a family, in words, wrapped as a docstring fragment's
    line (the engine parameter's None)."""
    if family not in TAPE_FROM:
        text = ("the tape for a Python f when the call is prepared; else the dual engine "
                "(a call without ``prep=``, where recording f costs more, and a C function)")
    else:
        text = (f"the tape for a Python f when the call is prepared, or without ``prep=`` "
                f"from {TAPE_FROM[family]} elements of x (where recording f pays); else "
                "the dual engine")
    return "\n    ".join(textwrap.wrap(text, 84))

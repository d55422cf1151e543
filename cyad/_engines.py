"""The engines a prep can run on, by name: the one registry of them.

An engine is a module providing an `Engine` subclass (cyad/_prep.pxd): the buffers
and function binding behind a prep's handle and its nogil call for each operator
family. `prepare_*` and the operators take ``engine=`` (default "dual") and make the
prep of that engine; adding an engine is a module and its name here.
"""
import importlib
from typing import Any

# name: (module, Engine subclass)
ENGINES = {
    "dual": ("cyad._dual_engine", "DualEngine"),
    "tape": ("cyad._tape_engine", "TapeEngine"),
}


# The default engine. The tape replays a prepared gradient, pullback, hvp or Hessian of a
# Python f 10 to 100 times faster than the dual engine evaluates f (and answers any f it
# cannot trace by the dual engine), so it is their default; the other operators' is the dual
# engine (a pushforward or Jacobian of a Python f evaluates it once per chunk either
# way). A call without prep= records f every time (0.4 ms for Rosenbrock's gradient, 0.8 ms
# for its hvp or Hessian): there the tape is the default only from these sizes of x, where
# the dual engine's call costs more (measured side by side, tape / dual for one unprepared
# call of Rosenbrock: gradient 1.7 at n = 176, 0.87 at 192; hvp 1.2 at 256, 0.83 at 320;
# Hessian 1.1 at 80, 0.69 at 96; an MLP's gradient of 4 456 parameters 2.2 ms against
# 13 s). cyad/_operators.pyx applies it.
TAPE_FROM = {"gradient": 192, "pullback": 192, "hvp": 320, "hessian": 96}


def engine_type(name: str | None) -> Any:
    """The Engine subclass of the engine called `name` (None: "dual")."""
    if name is None:
        name = "dual"
    try:
        module, cls = ENGINES[name]
    except (KeyError, TypeError):
        raise ValueError(f"cyad: unknown engine {name!r}; the engines are "
                         f"{', '.join(map(repr, ENGINES))}") from None
    return getattr(importlib.import_module(module), cls)

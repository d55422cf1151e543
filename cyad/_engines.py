"""The engines a prep can run on, by name: the one registry of them.

An engine is a module providing an `Engine` subclass (cyad/_prep.pxd): the buffers
and function binding behind a prep's handle and its nogil call for each operator
family. `prepare_*` and the operators take ``engine=`` (default "dual") and make the
prep of that engine; adding an engine is a module and its name here.
"""
import importlib

# name: (module, Engine subclass)
ENGINES = {
    "dual": ("cyad._dual_engine", "DualEngine"),
    "tape": ("cyad._tape_engine", "TapeEngine"),
}


def engine_type(name):
    """The Engine subclass of the engine called `name` (None: "dual")."""
    if name is None:
        name = "dual"
    try:
        module, cls = ENGINES[name]
    except (KeyError, TypeError):
        raise ValueError(f"cyad: unknown engine {name!r}; the engines are "
                         f"{', '.join(map(repr, ENGINES))}") from None
    return getattr(importlib.import_module(module), cls)

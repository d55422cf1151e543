"""SciPy's functions reach cyad's rules: dispatching wrappers in SciPy's modules.

A function SciPy writes in Python (scipy.linalg.expm, scipy.special.logsumexp, ...) is
not a NumPy function, so NumPy's ``__array_function__`` never hands it to an engine; it
calls np.asarray, which an engine's array refuses. For each function of
`cyad._primitives.scipy_functions.SCIPY_FUNCTIONS`, `install` puts in SciPy's public
module (scipy.linalg, scipy.special) a wrapper that calls cyad's version when an
argument is an engine array (or a tuple holding one, as cho_solve's ``(c, lower)``)
and SciPy's function otherwise: on plain arrays the result is SciPy's own, at the cost
of a look at the arguments' types (measured: 0.15-0.5 us a call, against SciPy's 10-100 us
for expm or logsumexp of small arrays; asv_bench/benchmarks/scipy_functions.py).
`functools.wraps` keeps the name, docstring and signature; the original is
``__wrapped__``. `install` runs when cyad is imported, for SciPy's modules already
imported, and an import hook runs it when one is imported later.

The trade-off: a name bound from SciPy before cyad was imported (``from scipy.linalg
import expm``, then ``import cyad``) keeps SciPy's function, and SciPy's internal calls
(scipy.linalg.expm_frechet calling expm) keep theirs too. Such a call meets the engine
array's refusal to become an ndarray, and `scipy_hint` finds the SciPy function on the
stack to name it and say what to do. SciPy's array-API dispatch (SCIPY_ARRAY_API=1)
was the other way: it asks of an array a whole array namespace (``__array_namespace__``),
and the functions listed here still compute through LAPACK on NumPy arrays, not through
that namespace, so it would not reach them.
"""
import functools
import importlib.abc
import sys

import numpy as np

from cyad._primitives._table import is_engine_array


# the types of the usual arguments of a plain call, passed over without a closer look
PLAIN = frozenset({np.ndarray, float, int, bool, str, type(None), np.float64, np.float32,
                   np.int64})


def _holds_engine_array(x):
    """Whether x (not of a `PLAIN` type) is an engine array or a tuple holding one."""
    if is_engine_array(x):
        return True
    return type(x) is tuple and any(is_engine_array(y) for y in x)


def dispatching(original, module, name):
    """SciPy's `original`, calling cyad's version (``SCIPY_FUNCTIONS[module][name]``) on
    engine arrays."""
    from cyad._primitives.scipy_functions import SCIPY_FUNCTIONS
    versions = SCIPY_FUNCTIONS[module]

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        # (the loops inline: this look costs every plain call of SciPy's function)
        for x in args:
            if type(x) not in PLAIN and _holds_engine_array(x):
                return versions[name](*args, **kwargs)
        if kwargs:
            for x in kwargs.values():
                if type(x) not in PLAIN and _holds_engine_array(x):
                    return versions[name](*args, **kwargs)
        return original(*args, **kwargs)

    wrapper.__cyad_dispatching__ = True
    return wrapper


# every replacement made in SciPy, in order: (module or class, name, SciPy's value there;
# _ABSENT where a class inherited it), for `restore`
_REPLACED = []
_ABSENT = object()


def replace(owner, name, wrapper):
    """Put `wrapper` as owner.name (owner: a SciPy module or class), remembering SciPy's.
    A function put into a module is named by that module and name, so that pickle finds
    it there (and a process without cyad unpickles SciPy's own)."""
    if isinstance(owner, type):
        _REPLACED.append((owner, name, owner.__dict__.get(name, _ABSENT)))
    else:
        _REPLACED.append((owner, name, getattr(owner, name)))
        if hasattr(wrapper, "__qualname__"):
            wrapper.__module__ = owner.__name__
            wrapper.__qualname__ = name
    setattr(owner, name, wrapper)


def install(module):
    """Put the dispatching wrappers into `module` (one of `MODULES`)."""
    from cyad._primitives.scipy_functions import SCIPY_FUNCTIONS
    for name in SCIPY_FUNCTIONS.get(module.__name__, {}):
        original = getattr(module, name, None)
        if original is None or getattr(original, "__cyad_dispatching__", False):
            continue
        replace(module, name, dispatching(original, module.__name__, name))
    if module.__name__ in ("scipy.sparse", "scipy.sparse.linalg"):
        # (products by scipy.sparse's matrices, sparse solves: methods and factorizations)
        from cyad._primitives import scipy_sparse_matrices
        scipy_sparse_matrices.install(module)
    if module.__name__ == "scipy.stats":
        # (the distributions' methods: cyad's formulas on engine arrays)
        from cyad._primitives import scipy_stats
        scipy_stats.install(module)
    if module.__name__ == "scipy.interpolate":
        # (the interpolators' methods and constructors, make_interp_spline, interpn, ...)
        from cyad._primitives import scipy_interpolate
        scipy_interpolate.install(module)


MODULES = ("scipy.linalg", "scipy.special", "scipy.fft", "scipy.signal", "scipy.sparse",
           "scipy.sparse.linalg", "scipy.stats", "scipy.interpolate")


class _Loader(importlib.abc.Loader):
    """A SciPy module's loader, followed by `install`."""

    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        install(module)

    def __getattr__(self, name):
        # the rest of the loader's interface (get_source, resource readers, ...) is SciPy's
        return getattr(self.loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds the modules of `MODULES` through the other finders, with `_Loader`."""

    def find_spec(self, name, path, target=None):
        if name not in MODULES:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


def install_everywhere():
    """Install into SciPy's modules imported so far, and into those imported later."""
    for name in MODULES:
        module = sys.modules.get(name)
        if module is not None:
            install(module)
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def restore():
    """Put SciPy's own functions and methods back, and leave SciPy's modules imported
    later as they are."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
    while _REPLACED:
        owner, name, original = _REPLACED.pop()
        if original is _ABSENT:
            delattr(owner, name)
        else:
            setattr(owner, name, original)


# the environment variable that keeps `import cyad` from wrapping SciPy's functions
OPT_OUT = "CYAD_NO_SCIPY_WRAPPERS"


def scipy_wrappers(enabled=True):
    """Whether cyad's wrappers are in SciPy's modules: puts them in (``True``, as
    ``import cyad`` does) or puts SciPy's own functions back (``False``).

    ``import cyad`` wraps the SciPy functions that cyad differentiates (in scipy.linalg,
    scipy.special, scipy.fft, scipy.signal, scipy.sparse, scipy.sparse.linalg, scipy.stats
    and scipy.interpolate: functions, and methods of their classes), in the modules
    imported so far and in those imported later, so that unmodified code calling them
    on cyad's arrays is differentiated. On plain arrays a wrapper calls SciPy's function
    and returns its result, at the cost of a look at the arguments' types; it keeps
    SciPy's name, docstring and signature (SciPy's function is its ``__wrapped__``), and
    pickles as SciPy's. ``scipy_wrappers(False)`` undoes all of it, and nothing is
    wrapped when the environment variable ``CYAD_NO_SCIPY_WRAPPERS`` is set to ``1``
    before cyad is imported; SciPy's functions then refuse cyad's arrays, naming the
    function.

    Parameters
    ----------
    enabled : bool, default True
        Put the wrappers in (into the modules imported so far and those imported
        later), or take them all out.

    Examples
    --------
    >>> import scipy.linalg
    >>> cyad.scipy_wrappers(False)
    >>> hasattr(scipy.linalg.solve, "__wrapped__")
    False
    >>> cyad.scipy_wrappers(True)
    >>> scipy.linalg.solve.__wrapped__.__name__
    'solve'
    """
    if enabled:
        install_everywhere()
    else:
        restore()


def scipy_hint(depth=1):
    """A sentence naming the SciPy function on the stack that asked for an ndarray, and
    what to do; empty if there is none (`depth`: the frames above this one to start at)."""
    frame = sys._getframe(depth)
    caller = None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "scipy" or module.startswith("scipy."):
            caller = frame   # the outermost SciPy frame: the function the user called
        frame = frame.f_back
    if caller is None:
        return ""
    module = caller.f_globals["__name__"]
    name = caller.f_code.co_name
    if module.startswith("scipy.sparse"):
        from cyad._primitives.scipy_sparse_matrices import sparse_hint
        hint = sparse_hint(module, name)
        if hint:
            return hint
    from cyad._primitives.scipy_functions import SCIPY_FUNCTIONS
    public = next((m for m, functions in SCIPY_FUNCTIONS.items() if name in functions
                   and module.startswith(m)), None)
    if public is not None:
        return (f" It happened in {public}.{name}, which cyad differentiates when called "
                f"through SciPy's module after cyad is imported: a name bound before "
                f"(from {public} import {name}, then import cyad) keeps SciPy's function; "
                f"import cyad first, or call {public}.{name}.")
    return (f" It happened in {module}.{name}, a SciPy function cyad has no rule for: give "
            "it one with cyad.custom_derivative.")

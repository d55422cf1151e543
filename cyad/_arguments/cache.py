"""cyad.Cache: a scratch argument of f, which f may overwrite.

f(x, ..., work) that fills a work array and reads it back cannot be differentiated with a
plain float array as work: the engines' values carry derivatives, and writing them into a
float array would drop them (the dual engine refuses). Passed as ``cyad.Cache(work)``, the
argument is replaced, in every evaluation of f that carries derivatives, by a new
zero-filled array of the engine's kind shaped like work (a structure of arrays: each
leaf), and in a plain evaluation of f by work itself (by such arrays of the outer
differentiation's kind when the call is nested in one). A Cache is a static argument: the
same object (or one equal to it, of the same shapes) at every call of a prep.
"""
from typing import Any

import numpy as np
import optree


class Cache:
    """A scratch argument of f: ``cyad.gradient(f, x, cyad.Cache(work))``.

    In each evaluation of f that carries derivatives, f receives in its place a new
    zero-filled array of the differentiated x's dtype and of the engine's kind, shaped like
    ``work`` (for a structure of arrays, such an array per leaf); in a plain evaluation
    (cyad learning f's value, an auxiliary output), ``work`` itself. What f leaves in it
    is not kept. Caches of the same shapes are equal: a prep takes any of them.

    Parameters
    ----------
    work : array_like, or a structure of them
        What f writes into: only its shapes are used.

    Examples
    --------
    >>> def f(x, work):
    ...     work[0] = x ** 2
    ...     work[1] = np.sin(x)
    ...     return np.sum(work[0] * work[1])
    >>> cyad.gradient(f, np.array([1.0, 2.0]), cyad.Cache(np.empty((2, 2))))
    array([2.22324428, 1.97260236])
    """

    __slots__ = ("work", "spec", "shapes")

    def __init__(self, work: Any) -> None:
        self.work = work
        leaves, self.spec = optree.tree_flatten(work, none_is_leaf=False)
        self.shapes = tuple(np.shape(leaf) for leaf in leaves)

    def scratch(self, x: Any) -> Any:
        """The arrays f receives in an evaluation at x (an engine's array or an ndarray)."""
        return self.spec.unflatten([np.zeros_like(x, shape=shape) for shape in self.shapes])

    def __eq__(self, other: object) -> bool:
        return type(other) is Cache and self.spec == other.spec and self.shapes == other.shapes

    def __hash__(self) -> int:
        return hash(self.shapes)

    def __repr__(self) -> str:
        return f"cyad.Cache(of shapes {self.shapes})"


def plain(arguments: Any, engine_x: Any = None) -> Any:
    """The arguments of a plain evaluation: each Cache replaced by its work arrays, or
    inside another differentiation (engine_x, an engine's array among the differentiated
    arguments) by scratch arrays of its kind."""
    def work(leaf: Any) -> Any:
        if not isinstance(leaf, Cache):
            return leaf
        return leaf.work if engine_x is None else leaf.scratch(engine_x)
    return optree.tree_map(work, arguments, none_is_leaf=False)

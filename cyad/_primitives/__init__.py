"""The NumPy functions cyad differentiates, for every engine: one table.

``TABLE`` maps each supported NumPy function to its entry (`_table` describes the
kinds: composition, constant, linear with its transpose, primitive with its JVP
and VJP). The entries live by responsibility: `structural` (linear and structural
functions, shape queries), `shapes` (padding, tiling, splitting, joining, selecting by
conditions), `elementwise` (NumPy's elementwise functions that are not ufuncs),
`reductions`, `products`, `linalg`, `compositions`.
An engine interprets the table (the dual arrays: `cyad._dual_functions`); adding
a NumPy function is adding its entry here.
"""
from cyad._primitives import (  # noqa: F401
    compositions,
    elementwise,
    linalg,
    products,
    reductions,
    shapes,
    structural,
)
from cyad._primitives._table import TABLE, Composition, Constant, Linear, Primitive

__all__ = ["TABLE", "Composition", "Constant", "Linear", "Primitive"]

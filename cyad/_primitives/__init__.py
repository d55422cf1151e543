"""The NumPy functions cyad differentiates, for every engine: one table.

``TABLE`` maps each supported NumPy function to its entry (`_table` describes the
kinds: composition, constant, linear with its transpose, primitive with its JVP
and VJP). The entries live by responsibility: `structural` (linear and structural
functions, shape queries), `reductions`, `products`, `linalg`, `decompositions`,
`linalg_compositions`, `compositions`, `special` (scipy.special's ufuncs of three
operands, in ``NAMED``).
An engine interprets the table (the dual arrays: `cyad._dual_functions`); adding
a NumPy function is adding its entry here.
"""
from cyad._primitives import compositions, linalg, products, reductions, structural  # noqa: F401
from cyad._primitives import decompositions, linalg_compositions  # noqa: F401
from cyad._primitives import special  # noqa: F401
from cyad._primitives._table import NAMED, TABLE, Composition, Constant, Linear, Primitive

__all__ = ["NAMED", "TABLE", "Composition", "Constant", "Linear", "Primitive"]

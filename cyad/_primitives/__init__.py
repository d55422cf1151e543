"""The NumPy functions cyad differentiates, for every engine: one table.

``TABLE`` maps each supported NumPy function to its entry (`_table` describes the
kinds: composition, constant, linear with its transpose, primitive with its JVP
and VJP). The entries live by responsibility: `structural` (linear and structural
functions, shape queries), `shapes` (padding, tiling, splitting, joining, selecting by
conditions), `elementwise` (NumPy's elementwise functions that are not ufuncs),
`reductions`, `products`, `linalg`, `decompositions`, `linalg_compositions`,
`compositions`, `fourier` (numpy.fft, on the parts of complex arrays: cyad._complex),
`complex_parts` (np.real, np.imag, np.angle ... of real arrays), `statistics` (nan*, order
statistics, cumulative products, cov), `stencils`
(convolutions, np.gradient, np.trapezoid, np.polyval), `special` (scipy.special's ufuncs of
three operands, in ``NAMED``); `ufunc_methods` gives the ufuncs' reduce, accumulate, outer
and at on an engine's arrays.
An engine interprets the table (the dual arrays: `cyad._dual.functions`); adding
a NumPy function is adding its entry here. SciPy's functions outside NumPy's dispatch
are in `scipy_functions` (imported when SciPy is), as compositions and custom functions
(`custom`, whose entries an engine finds with `_table.entry_of`); `scipy_dispatch` puts
them in SciPy's modules, and `scipy_sparse_matrices` the products and solves of a constant
scipy.sparse matrix (a linear entry of its own) in scipy.sparse's classes;
`scipy_sparse_varying` the sparse matrices whose entries carry derivatives (diags, kron).
"""
from cyad._primitives import (  # noqa: F401
    complex_parts,
    compositions,
    decompositions,
    elementwise,
    fourier,
    linalg,
    linalg_compositions,
    products,
    reductions,
    shapes,
    special,
    statistics,
    stencils,
    structural,
    ufunc_methods,
)
from cyad._primitives._table import NAMED, TABLE, Composition, Constant, Linear, Primitive

__all__ = ["NAMED", "TABLE", "Composition", "Constant", "Linear", "Primitive"]

"""The dual engine: forward mode on dual numbers.

`array` holds the `Dual` array a Python f receives (ufuncs through the rule table, indexing,
conversions refused, the tags of its differentiation); `functions` interprets the
primitive table of NumPy functions on it (second order through nested duals); `layout`
states where each direction sits in a row of partials, and `kernels` the compiled chunk
loops that apply a rule over a dual buffer; `engine` is the engine behind a prep (seed a
chunk of directions, evaluate f, read the partials).
"""

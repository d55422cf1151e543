"""Sparse Jacobians and Hessians, from few products.

`sparsity` reads a function's Jacobian or Hessian pattern off its tape (index sets
propagated instruction by instruction: `index_sets` compiled, `index_bands` symbolic);
`graphs` reads a pattern into CSR and builds the graphs a coloring colors and their vertex
orders; `coloring` colors them (columns, rows, stars, acyclic, bidirectional) and makes the
seed matrices; `recovery` reads every nonzero back out of the compressed products, without
allocating; `operators` holds `sparse_jacobian` and `sparse_hessian` and their preps, which
push the seeds through a prepared pushforward, pullback or hvp.
"""

"""The figure of docs/guide/sparsity.md: a 5-point stencil's Jacobian pattern from
cyad.jacobian_sparsity, its column coloring from cyad.prepare_sparse_jacobian, and the
compressed Jacobian the colors' pushforwards fill. Sphinx draws it at build time (matplotlib's
plot directive); ``python docs/plots/sparsity_coloring.py`` draws it alone."""
import matplotlib.pyplot as plt
import numpy as np

import cyad

M = 6                                   # an M x M grid: M^2 unknowns


def stencil(u):
    """A 5-point Laplacian (zero outside the grid) plus a reaction term, u raveled."""
    w = u.reshape(M, M)
    row, column = np.zeros_like(w[:1]), np.zeros_like(w[:, :1])
    laplacian = (np.concatenate([w[1:], row]) + np.concatenate([row, w[:-1]])
                 + np.concatenate([w[:, 1:], column], axis=1)
                 + np.concatenate([column, w[:, :-1]], axis=1) - 4.0 * w)
    return (laplacian + w * w).ravel()


x = np.linspace(0.1, 1.0, M * M)
pattern = cyad.jacobian_sparsity(stencil, x).tocoo()
prep = cyad.prepare_sparse_jacobian(stencil, x, coloring="column")
colors = prep.colors                    # the color of each column (one pushforward each)
cmap = plt.get_cmap("tab10")

fig, (full, compressed, grid) = plt.subplots(
    1, 3, figsize=(11, 4), layout="constrained", gridspec_kw={"width_ratios": [4, 1.6, 3]})
full.scatter(pattern.col, pattern.row, c=cmap(colors[pattern.col]), marker="s", s=18)
full.set(xlim=(-0.5, M * M - 0.5), ylim=(M * M - 0.5, -0.5), aspect="equal",
         xlabel="column j (unknown)", ylabel="row i (output)",
         title=f"pattern: {pattern.nnz} nonzeros of {M * M}\u00b2")
compressed.scatter(colors[pattern.col], pattern.row, c=cmap(colors[pattern.col]), marker="s",
                   s=18)
compressed.set(xlim=(-0.5, prep.n_colors - 0.5), ylim=(M * M - 0.5, -0.5),
               xticks=range(prep.n_colors), xlabel="color", yticklabels=[],
               title=f"{prep.n_colors} pushforwards")
grid.imshow(colors.reshape(M, M), cmap=cmap, vmin=0, vmax=cmap.N - 1)
for i, j in np.ndindex(M, M):
    grid.text(j, i, str(i * M + j), ha="center", va="center", fontsize=8)
grid.set(xticks=[], yticks=[], title="the grid's unknowns, by color")
fig.suptitle("A 5-point stencil's Jacobian: columns of one color share no row")

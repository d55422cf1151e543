"""The figure of docs/guide/performance.md: each peer's time over cyad's against n, from a run
of asv_bench/peers.py saved in docs/_data/peers.json. Sphinx draws it at build time
(matplotlib's plot directive); ``python docs/plots/peers_ratios.py`` draws it alone. To
measure anew: ``python -P asv_bench/peers.py --quick --json docs/_data/peers.json``."""
import json
import pathlib
import sys

import matplotlib.pyplot as plt

# the plot directive runs this file with sys.argv = [its path] and no __file__
DATA = pathlib.Path(sys.argv[0]).resolve().parent.parent / "_data" / "peers.json"
# operator: (problem, JAX's row, SciPy's finite differences' row or None)
OPERATORS = {
    "JVP": ("P2", "jax", "fd2"),
    "Jacobian": ("P3", "jax", "fd2"),
    "gradient": ("P4", "jax-grad", "fd2"),
    "Hessian": ("P5", "jax", "fd2"),
    "Hessian-vector product": ("P6", "jax", "fd2"),
    "third derivative (nested)": ("P8", "jax", None),
    "gradient of an hvp (nested)": ("P9", "jax", None),
    "MLP gradient (5 256 parameters)": ("P7", "jax-grad", "fd2"),
}


def ratios(problem, peer, engines):
    """n and the peer's median time over the faster cyad engine's, where both were timed."""
    rows = problem["rows"]

    def median(key, n):
        return rows.get(key, {}).get("cells", {}).get(n, {}).get("median")

    points = []
    for n in rows[peer]["cells"]:
        mine = [m for m in (median(f"cyad:{e}", n) for e in engines) if m is not None]
        theirs = median(peer, n)
        if mine and theirs is not None:
            points.append((int(n), theirs / min(mine)))
    return sorted(points)


report = json.loads(DATA.read_text())
fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True, layout="constrained")
for ax, column, title in zip(axes, (1, 2), ("jax.jit (reverse mode for gradients)",
                                            "SciPy's 2-point finite differences")):
    for k, (name, spec) in enumerate(OPERATORS.items()):
        if spec[column] is None or spec[0] not in report["problems"]:
            continue
        points = ratios(report["problems"][spec[0]], spec[column], report["engines"])
        if points:
            ax.plot(*zip(*points), "o-", color=f"C{k}", label=name)
    ax.axhline(1.0, color="k", lw=1)
    ax.set(xscale="log", yscale="log", xlabel="n", title=title)
    ax.grid(True, which="major", alpha=0.3)
axes[0].set_ylabel("peer's time / cyad's (above 1: cyad is faster)")
axes[0].legend(fontsize=8)
versions = report["versions"]
fig.suptitle(f"cyad {versions['cyad']} against its peers (asv_bench/peers.py"
             f"{' --quick' if report['quick'] else ''}; NumPy {versions['numpy']}, "
             f"JAX {versions['jax']}, SciPy {versions['scipy']}): medians, the faster engine")

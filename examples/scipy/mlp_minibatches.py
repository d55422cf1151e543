"""A small neural network on mini-batches: weights in a dict, the batch an argument
=================================================================================

A multilayer perceptron (1 input, 64 tanh units, 64 tanh units, 1 output) fitted to noisy
samples of sin(3 t) by Adam on mini-batches, its loss written as people write it:

    def loss(params, X, Y): ...     # params a dict of layer weights, (X, Y) a batch

    python examples/scipy/mlp_minibatches.py [--steps 2000] [--batch 64] [--quick] [--show]

The gradient is prepared once, at the first batch: ``cyad.prepare_gradient(loss, params, X,
Y)``. Every step then passes its own batch as arguments, and writes the gradient into a dict
of buffers (``out=``): the tape records the loss once (``prep.records``), the batch's arrays
being inputs of every call, not constants of the recording. The script prints the training
loss along the way, the recordings and preparations made, and the time per step beside the
same gradient of one flat vector with one batch closed over (the form before f took
arguments), checked against central differences of the loss.

The figure (drawn when matplotlib is installed; --show opens it in a window): the samples,
the network's curve after training, and the loss per step.
"""
import argparse
import time

import numpy as np

import cyad

LAYERS = [1, 64, 64, 1]


def init(rng):
    params = {}
    for k, (n_in, n_out) in enumerate(zip(LAYERS[:-1], LAYERS[1:])):
        params[f"W{k}"] = rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)
        params[f"b{k}"] = np.zeros(n_out)
    return params


def predict(params, X):
    h = X
    for k in range(len(LAYERS) - 1):
        h = h @ params[f"W{k}"] + params[f"b{k}"]
        if k < len(LAYERS) - 2:
            h = np.tanh(h)
    return h


def loss(params, X, Y):
    return np.mean((predict(params, X) - Y) ** 2)


def data(rng, count):
    t = rng.uniform(-1.5, 1.5, (count, 1))
    return t, np.sin(3 * t) + 0.05 * rng.standard_normal((count, 1))


def adam(params, steps, batch, rng, rate=3e-3):
    """Adam on mini-batches: the gradient prepared once, each batch an argument."""
    X, Y = data(rng, batch)
    prep = cyad.prepare_gradient(loss, params, X, Y)
    g = {k: np.empty_like(v) for k, v in params.items()}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(v) for k, v in params.items()}
    losses = []
    for step in range(1, steps + 1):
        X, Y = data(rng, batch)
        cyad.gradient(loss, params, X, Y, prep=prep, out=g)
        for k in params:
            m[k] = 0.9 * m[k] + 0.1 * g[k]
            v[k] = 0.999 * v[k] + 0.001 * g[k] ** 2
            params[k] = params[k] - rate * (m[k] / (1 - 0.9 ** step)) / (
                np.sqrt(v[k] / (1 - 0.999 ** step)) + 1e-8)
        losses.append(loss(params, X, Y))
    return params, losses, prep


def flat_form(params, X, Y):
    """The same loss of one flat vector, with one batch closed over."""
    shapes = [(k, v.shape, v.size) for k, v in params.items()]

    def flat_loss(x):
        p, start = {}, 0
        for k, shape, size in shapes:
            p[k] = x[start:start + size].reshape(shape)
            start += size
        return loss(p, X, Y)

    return flat_loss, np.concatenate([v.ravel() for v in params.values()])


def per_call(call, repeat):
    call()
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(20):
            call()
        best = min(best, (time.perf_counter() - start) / 20)
    return best


def main():
    parser = argparse.ArgumentParser(
        description="An MLP trained on mini-batches, its weights a dict and the batch an argument")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--quick", action="store_true", help="300 steps, shorter timings")
    parser.add_argument("--show", action="store_true", help="show the figure in a window")
    a = parser.parse_args()
    steps, repeat = (300, 3) if a.quick else (a.steps, 10)
    rng = np.random.default_rng(0)
    params = init(rng)
    started = time.perf_counter()
    params, losses, prep = adam(params, steps, a.batch, rng)
    elapsed = time.perf_counter() - started
    print(f"{steps} steps of Adam on batches of {a.batch}: {elapsed:.2f} s; training loss "
          f"{np.mean(losses[:20]):.4f} over the first 20 steps, {np.mean(losses[-20:]):.4f} "
          f"over the last 20")
    print(f"recordings of the loss: {prep.records}, preparations: {prep.preparations} "
          f"(one prep for {steps} batches)")

    X, Y = data(rng, a.batch)
    flat_loss, x = flat_form(params, X, Y)
    g = cyad.gradient(loss, params, X, Y)
    g_flat = np.concatenate([g[k].ravel() for k in params])
    h = 1e-6
    direction = rng.standard_normal(x.size)
    central = (flat_loss(x + h * direction) - flat_loss(x - h * direction)) / (2 * h)
    print(f"directional derivative: cyad {g_flat @ direction:.10f}, central difference "
          f"{central:.10f}")
    out = {k: np.empty_like(v) for k, v in params.items()}
    prep_flat = cyad.prepare_gradient(flat_loss, x)
    out_flat = np.empty_like(x)
    batches = [data(rng, a.batch) for _ in range(8)]
    state = {"k": 0}

    def with_arguments():
        state["k"] = (state["k"] + 1) % len(batches)
        cyad.gradient(loss, params, *batches[state["k"]], prep=prep, out=out)

    t_arguments = per_call(with_arguments, repeat)
    t_flat = per_call(lambda: cyad.gradient(flat_loss, x, prep=prep_flat, out=out_flat), repeat)
    print(f"gradient per step: {t_arguments * 1e6:.1f} us with the dict and a new batch as "
          f"arguments, {t_flat * 1e6:.1f} us for one flat vector with its batch closed over "
          f"(ratio {t_arguments / t_flat:.2f})")
    plot(params, losses, a.show)


def plot(params, losses, show):
    """The samples and the trained network's curve; the training loss per step."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:     # the figure is optional: matplotlib comes with the docs extra
        print("\n(matplotlib is not installed: no figure)")
        return
    rng = np.random.default_rng(1)
    X, Y = data(rng, 200)
    grid = np.linspace(-1.5, 1.5, 300)[:, None]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    left.plot(X[:, 0], Y[:, 0], "o", ms=3, color="0.5", label="samples")
    left.plot(grid[:, 0], predict(params, grid)[:, 0], color="C0", label="network")
    left.set(xlabel="t", ylabel="y", title="after training")
    left.legend()
    right.semilogy(losses, color="C1")
    right.set(xlabel="step", ylabel="mini-batch loss", title="training loss")
    fig.suptitle("An MLP with a dict of weights, the batch an argument of the prepared gradient")
    if show:
        plt.show()


if __name__ == "__main__":
    main()

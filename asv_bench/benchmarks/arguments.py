"""A prepared gradient of loss(params, X, Y): a dict of layer weights, a new batch per call.

The MLP of peers.py's P7 (32 inputs, 128 tanh hidden units, 8 outputs, 128 samples per batch),
its loss written with a dict of weights and the batch as arguments, against the same loss of
one flat vector with the batch closed over and unchanged (the form before f took arguments):
the ratio of the two is the cost of the containers and arguments (the tape records f once
either way; `records` below counts).
"""
import numpy as np

import cyad

INPUTS, HIDDEN, OUTPUTS, BATCH, BATCHES = 32, 128, 8, 128, 16


def loss(params, X, Y):
    hidden = np.tanh(X @ params["W1"] + params["b1"])
    return np.mean((hidden @ params["W2"] + params["b2"] - Y) ** 2)


class MLPGradient:
    params = [["dict and batch arguments", "flat vector, batch closed over"]]
    param_names = ["form"]

    def setup(self, form):
        rng = np.random.default_rng(0)
        weights = {"W1": rng.standard_normal((INPUTS, HIDDEN)) * 0.1, "b1": np.zeros(HIDDEN),
                   "W2": rng.standard_normal((HIDDEN, OUTPUTS)) * 0.1, "b2": np.zeros(OUTPUTS)}
        batches = [(rng.standard_normal((BATCH, INPUTS)), rng.standard_normal((BATCH, OUTPUTS)))
                   for _ in range(BATCHES)]
        if form == "dict and batch arguments":
            prep = cyad.prepare_gradient(loss, weights, *batches[0], engine="tape")
            out = {k: np.empty_like(v) for k, v in weights.items()}

            def run():
                for X, Y in batches:
                    cyad.gradient(loss, weights, X, Y, prep=prep, out=out)
        else:
            X, Y = batches[0]
            shapes = [(k, v.shape, v.size) for k, v in weights.items()]
            flat = np.concatenate([v.ravel() for v in weights.values()])

            def flat_loss(x):
                params, start = {}, 0
                for k, shape, size in shapes:
                    params[k] = x[start:start + size].reshape(shape)
                    start += size
                return loss(params, X, Y)

            prep = cyad.prepare_gradient(flat_loss, flat, engine="tape")
            out = np.empty_like(flat)

            def run():
                for _ in batches:
                    cyad.gradient(flat_loss, flat, prep=prep, out=out)
        self.run = run

    def time_gradient_per_batch(self, form):
        self.run()

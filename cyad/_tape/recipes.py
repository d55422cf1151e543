"""The tape's recipes: how the program of each operator family is derived from f's tape.

A recipe is a chain of program transformations (cyad/_tape/transform.py), and what the
derived program's inputs and outputs are: the seed inputs after the primal ones
(tangents or cotangents, set per chunk of directions) and the outputs after f's value.
The tape engine (cyad/_tape/engine.pyx) derives a prep's program by its family's recipe
(a Jacobian of few rows by "rows"); nested operators (cyad/_nested.py) by the same
transformations, composed (the derivatives written as primal operations, which
differentiate again).

Every derivation takes (tape, values, names, lanes, composed): f's tape, the values of
its inputs to record at, their names, the directions of one chunk, and `composed`.
"""
from typing import Callable, NamedTuple

import numpy as np

from cyad._tape.transform import jvp, vjp


def forward(tape, values, names, lanes, composed=False):
    """f's value and its tangents along `lanes` directions of x."""
    return jvp(tape, values, lanes, [0], names, composed=composed)[0]


def gradient(tape, values, names, lanes=None, composed=False):
    """f's value and the gradient of its scalar value (a cotangent of ones, a constant)."""
    return vjp(tape, values, [0], names, unit=True, composed=composed)[0]


def reverse(tape, values, names, lanes, composed=False):
    """f's value and the cotangents of x for `lanes` cotangents of f's value."""
    return vjp(tape, values, [0], names, lanes=lanes, composed=composed)[0]


def forward_over_reverse(tape, values, names, lanes, composed=False):
    """f's value, its gradient, and the gradient's tangents along `lanes` directions of x
    (Hessian-vector products; a Hessian is lanes of them)."""
    swept = gradient(tape, values, names, None, composed)
    return jvp(swept.tape, values, lanes, [0], names, tangents_of=[1], composed=composed)[0]


def forward_over_forward(tape, values, names, lanes=1, composed=False):
    """f's value, its first and its second derivative along the tangent 1 of a scalar x:
    the first derivative's tangent alone (the inner tangent is a seed input too)."""
    ones = np.ones((1,) + np.shape(values[0]), np.asarray(values[0]).dtype)
    first = forward(tape, values, names, 1, composed)
    return jvp(first.tape, values + [ones], 1, [0], names + ["tx"], seeded=[len(values)],
               tangents_of=[1], composed=composed)[0]


class Recipe(NamedTuple):
    derive: Callable       # one of the derivations above
    seeds: int             # seed inputs after the primal ones: none, a tangent (cotangent),
    #                        or the inner and the outer tangent of forward over forward
    outputs: tuple         # the derived program's outputs after f's value
    reverse_lanes: bool    # its chunk of directions is a reverse sweep's (lanes of cotangents)
    result_size: str       # the numbers of a direction's result: "x" (x's size) or "f" (f's
    #                        value's: a Jacobian's column; the gradient's one direction too)
    first_size: str        # the numbers of the first-order result


RECIPES = {
    "pushforward": Recipe(forward, 1, ("result",), False, "f", "f"),
    "derivative": Recipe(forward, 1, ("result",), False, "f", "f"),
    "jacobian": Recipe(forward, 1, ("result",), False, "f", "f"),
    # a Jacobian of few rows: lanes of basis cotangents
    "rows": Recipe(reverse, 1, ("result",), True, "x", "f"),
    "gradient": Recipe(gradient, 0, ("result",), False, "f", "f"),
    "pullback": Recipe(reverse, 1, ("result",), True, "x", "f"),
    "hvp": Recipe(forward_over_reverse, 1, ("first", "result"), False, "x", "x"),
    "hessian": Recipe(forward_over_reverse, 1, ("first", "result"), False, "x", "x"),
    "second_derivative": Recipe(forward_over_forward, 2, ("first", "result"), False, "f",
                                "f"),
}

"""Lists and tuples of arrays as one array: what np.asarray makes of them, on any array.

An ODE right-hand side in solve_ivp's style returns `[dx, dy]`, and code assigns
`y[...] = [a, b]`; NumPy stacks such a list into one array (np.asarray), but that
conversion asks each part for a plain ndarray, which a dual or a tracer array cannot
give without dropping its derivative. `stacked` builds the same array with np.stack,
which every engine's arrays take, part by part (nested lists too).
"""
import numpy as np


def stacked(value, what="f's result"):
    """`value` as one array where it is a list or tuple (of numbers, arrays or further
    lists), stacked as np.asarray stacks one; any other value as it is. `what` names the
    value in errors."""
    if not isinstance(value, (list, tuple)):
        return value
    parts = [stacked(part, what) for part in value]
    if not parts:
        raise ValueError(f"cyad: {what} is an empty {type(value).__name__}")
    try:
        return np.stack(parts)
    except ValueError:
        shapes = [np.shape(part) for part in parts]
        raise ValueError(f"cyad: {what} is a {type(value).__name__} of parts shaped {shapes}: "
                         "a list or tuple is stacked into one array, as np.asarray stacks "
                         "one, so its parts must have one shape") from None

"""What cyad's arrays say when f asks for something they refuse: one text per refusal,
for every engine (`where` names the arrays: "dual arrays", "traced arrays").
"""
import numpy as np


def missing_method(name, where):
    """The error of an ndarray method the arrays lack (an AttributeError, so that
    hasattr() still answers False)."""
    function = getattr(np, name, None)
    from cyad._primitives import TABLE
    if function in TABLE:
        advice = f"call np.{name}(x, ...), which cyad supports"
    else:
        advice = "cyad has no derivative rule for it"
    return AttributeError(f"cyad: ndarray.{name} is not supported on {where} ({advice})")


def integer_refused(function, where):
    """round(x), math.floor(x), math.ceil(x), math.trunc(x): a Python int (the tape
    guards one; the dual engine refuses it, as int())."""
    numpy = {"round": "round", "math.floor": "floor", "math.ceil": "ceil",
             "math.trunc": "trunc"}[function]
    return TypeError(f"cyad: {function}() of {where} would give a Python int without its "
                     f"derivative; use np.{numpy}(x) (derivative 0), which stays an array")


def number_refused(method):
    return TypeError(f"cyad: {method}() of a dual array gives Python floats, which would drop "
                     "the derivative; index the array instead (x[0], x[i, j]), which keeps it")


def function_name(function):
    """A NumPy or SciPy function's public name: its module up to the first private part
    (numpy.linalg.qr, numpy.fft.fft, scipy.special.logsumexp)."""
    module = getattr(function, "__module__", None) or "numpy"
    public = []
    for part in module.split("."):
        if part.startswith("_"):
            break
        public.append(part)
    return ".".join(public + [function.__name__])


def returned_under_y(result):
    """f(y, x) returned a value: with y=, cyad differentiates what f writes into y."""
    shape = getattr(result, "shape", None)
    what = _short(result) if shape is None else f"an array of shape {shape}"
    return ValueError(
        f"cyad: f returned {what} when called as f(y, x) with y=; with y=, cyad calls f(y, x) and differentiates what f writes into y, and "
        "f's return value would be lost. For a function that returns its result, drop y= "
        "(pass other data through a closure or functools.partial)")


def _short(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def not_scalar(operator, shape, two_argument, advice=""):
    """A scalar operator's f whose output has `shape`: f's result, or y with y=."""
    whose = (f"y, f's output in f(y, x), has shape {shape}" if two_argument
             else f"f returns shape {shape}")
    return ValueError(f"cyad: {operator} needs a scalar-valued f, but {whose}{advice}")

"""What cyad's arrays say when f asks for something they refuse: one text per refusal,
for every engine (`where` names the arrays: "dual arrays", "traced arrays").
"""
import linecache
import sys

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
        f"cyad: f returned {what} when called as f(y, x) with y=; with y=, cyad calls f(y, x) "
        "and differentiates what f writes into y, and f's return value would be lost. For a "
        "function that returns its result, drop y= (pass other data through a closure or "
        "functools.partial)")


def _short(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def not_scalar(operator, shape, two_argument, advice=""):
    """A scalar operator's f whose output has `shape`: f's result, or y with y=."""
    whose = (f"y, f's output in f(y, x), has shape {shape}" if two_argument
             else f"f returns shape {shape}")
    return ValueError(f"cyad: {operator} needs a scalar-valued f, but {whose}{advice}")


# -- where a refusal happened -------------------------------------------------------------

# the packages whose code is not the user's (NumPy's, SciPy's, cyad's, Python's own)
LIBRARIES = {"numpy", "scipy", "cyad"} | set(sys.stdlib_module_names)


def conversion_hint(arrays):
    """What to do instead of making a Python number or a plain ndarray of cyad's `arrays`."""
    return (f"Keep the computation in NumPy operations on the {arrays} cyad passes in: "
            "allocate buffers with np.zeros_like(x) or np.empty_like(x) rather than "
            "np.zeros(n), build arrays with np.stack/np.concatenate rather than "
            f"np.array([...]), and write results into {arrays} rather than plain ndarrays.")


def conversion_refused(what, general):
    """The TypeError of a dual or traced value asked to become a Python number or a plain
    ndarray (`what`: "a dual number cannot become a float"): the user's line that asked,
    the library function it called that asked (np.vectorize, scipy.integrate.quad), and
    the way out for it (`general` where none is known)."""
    site, library = _refusal_site(sys._getframe(1))
    advice = _advice(site or "", library)
    if library.startswith("scipy"):
        from cyad._primitives.scipy_dispatch import scipy_hint
        advice = scipy_hint(2) or advice
    if any(f"{name}(" in (site or "") for name in ("asarray", "asanyarray", "array")):
        advice = (advice.strip() or general) + _THROUGH_ASARRAY
    return TypeError(f"cyad: {what}: that would drop its derivative.{_site_text(site, library)} "
                     + (advice.strip() or general))


_THROUGH_ASARRAY = (" Where a library converts its arguments with np.asarray or np.array, run the "
                    "call inside `with cyad.through_asarray():`, which passes cyad's arrays "
                    "through those conversions.")


def users_line():
    """" In qualname (file:line): `source`." of the user's line that led to a refusal being
    raised (empty where no frame is the user's): to end an error's message."""
    return _site_text(*_refusal_site(sys._getframe(1)))


def _site_text(site, library):
    if site is None:
        return ""
    return f" {site}" + (f", inside {library}" if library else "") + "."


def _refusal_site(frame):
    # from `frame` outwards, the user's innermost frame (not NumPy's, SciPy's, cyad's or
    # Python's own library) as "In qualname (file:line): `source`", and the public name of
    # the outermost library function between it and the refusal
    called = None
    while frame is not None and _library_module(frame.f_globals.get("__name__") or ""):
        if not (frame.f_globals.get("__name__") or "").startswith("cyad"):
            called = frame
        frame = frame.f_back
    if frame is None:
        return None, ""
    code = frame.f_code
    source = linecache.getline(code.co_filename, frame.f_lineno).strip()
    site = f"In {code.co_qualname} ({code.co_filename}:{frame.f_lineno}): `{source}`"
    return site, "" if called is None else _public_name(called)


def _library_module(name):
    return name.partition(".")[0] in LIBRARIES


def _public_name(frame):
    # numpy.vectorize for vectorize.__call__ in numpy.lib._function_base_impl; scipy's
    # functions by their module up to the first private part
    module = frame.f_globals["__name__"]
    qualname = frame.f_code.co_qualname
    owner, _, name = qualname.rpartition(".")
    if owner and name.startswith("__"):
        qualname = owner
    root = "numpy" if module.startswith("numpy") else module.split("._")[0]
    return f"{root}.{qualname}"


def _advice(site, library):
    if library == "numpy.vectorize":
        return ("np.vectorize calls its function on plain numbers: write it with NumPy "
                "operations on whole arrays (np.where for a branch), which cyad differentiates.")
    if library == "numpy.AxisConcatenator":
        return ("np.r_ and np.c_ convert their items to plain ndarrays: write np.concatenate "
                "(np.column_stack for np.c_), or run f inside `with cyad.through_asarray():`, "
                "where they pass cyad's arrays through.")
    if "math." in site:
        return ("math's functions take Python floats: use NumPy's (np.exp, np.log, "
                "np.sqrt, ...), which take cyad's arrays.")
    if "float64(" in site or "float32(" in site or "float(" in site:
        return ("A Python or NumPy scalar type makes a plain number: index the array instead "
                "(x[0] is a number of cyad's, with its derivative).")
    return ""

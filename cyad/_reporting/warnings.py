"""cyad's warnings: a category of their own, each given once per prep (or per function)."""
import warnings

from cyad._engines import TAPE_FROM


class CyadWarning(UserWarning):
    """A call that works, but not as well as it could: slower than another choice would be
    (the text names it), or in a way the user may not expect. Each is given once per prep.

    Examples
    --------
    Silence them, or make them errors, as any warning:

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", cyad.CyadWarning)
    ...     float(cyad.derivative(np.sin, 0.0))
    1.0
    """


def warn_once(holder: set[str], key: str, message: str, stacklevel: int = 1) -> None:
    """Warn with `message` unless `holder` (a set kept by a prep or a function) has `key`.
    `stacklevel` counts from warn_once's caller, as warnings.warn's (compiled code has no
    frame: called from it, 1 names the user's line that called cyad)."""
    if key in holder:
        return
    holder.add(key)
    warnings.warn(message, CyadWarning, stacklevel=stacklevel + 1)


# the work a call on the dual engine is expected to take, from its first evaluation of f,
# above which it warns (with the faster alternative)
LONG_CALL_SECONDS = 5.0


def long_call(operator: str, evaluations: int, seconds: float, python: bool) -> str:
    """The text of a dual-engine call expected to take long: its work, and the faster way."""
    estimate = evaluations * seconds
    text = (f"cyad: this {operator} evaluates f {evaluations} times per call on the dual "
            f"engine, about {estimate:.3g} s ({seconds * 1e3:.3g} ms per evaluation). ")
    if not python:
        return text + "A larger chunk= runs fewer evaluations of more lanes each."
    if operator in TAPE_FROM:   # (the families a tape computes in reverse mode)
        text += ("The tape (engine='tape', the default of a prepared call) computes it in "
                 "reverse mode without evaluating f per direction")
        if operator == "hessian":
            text += ("; where the Hessian is sparse, cyad.sparse_hessian evaluates a few "
                     "colors of directions; a few products need cyad.hvp, not the matrix")
        return text + "."
    if operator == "jacobian":
        return text + ("Where the Jacobian is sparse, cyad.sparse_jacobian evaluates a few "
                       "colors of directions; with few outputs, engine='tape' computes it by "
                       "rows (reverse mode).")
    return text + "Fewer directions per call, or a C function (cyad.FunctionWrapper), cost less."


def serial_workers(workers: int, operator: str, replays: bool) -> str:
    """The text of workers= that cannot run in parallel, and why."""
    text = f"cyad: workers={workers} runs this {operator} serially: "
    if operator in ("derivative", "second_derivative"):
        return text + "it has a single direction, nothing to split."
    if replays:
        return text + ("on the tape it is one reverse sweep, nothing to split (the replay "
                       "splits large elementwise work across cyad.set_threads threads).")
    return text + ("a Python f on the dual engine holds the GIL for every evaluation, so its "
                   "parts would only take turns. The tape (engine='tape', the default of a "
                   "prepared call of a Python f) and C functions "
                   "(cyad.FunctionWrapper) run in parallel; cyad.at_points runs a Python f in "
                   "parallel through a process pool (workers=Pool().map).")

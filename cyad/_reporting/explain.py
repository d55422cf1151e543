"""cyad.explain: which engine a prep runs on and why, and what each of its calls does."""
from typing import Any

from cyad._engines import TAPE_FROM
from cyad._core import _FAMILY_NAMES, Prep


class Explanation:
    """The text of `explain`, shown as it is (its repr is the text)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def __str__(self) -> str:
        return "\n".join(self.lines)

    __repr__ = __str__


def explain(prep: Prep) -> Explanation:
    """Which engine a prep runs on, why, and what a call does (and costs).

    Parameters
    ----------
    prep : Prep
        A prep from a ``prepare_*`` function (called or not yet).

    Returns
    -------
    Explanation
        Its lines (``str()`` gives the text): the engine and the reason it was chosen, the
        work of one call (evaluations of f, or replays of a tape and their size), what a
        tape compares before each call, what happened so far (records, hand-overs), and
        the other engine's work where it would be less.

    Examples
    --------
    >>> prep = cyad.prepare_gradient(lambda x: np.sum(x ** 2), np.ones(400))
    >>> print(cyad.explain(prep))  # doctest: +ELLIPSIS
    gradient of f(x), a Python callable: x (400,) float64
    engine 'tape': chosen by default: a gradient of a Python f replays a tape ...
    a call: one reverse sweep of its tape per call, f not evaluated
    not yet called: the first call traces f once and records its tape
    """
    if not isinstance(prep, Prep):
        raise TypeError(f"cyad.explain takes a prep from a prepare_* function, not "
                        f"{type(prep).__name__}")
    family = _FAMILY_NAMES[prep.family]
    form = "f(y, x)" if prep.two_argument else "f(x)"
    kind = "a Python callable" if prep.is_python else "a C function"
    lines = [f"{family} of {form}, {kind}: x {prep.x_shape} {prep.dtype}",
             f"engine {prep.engine!r}: {prep.why_engine}"]
    state = prep.engine_state
    if prep.engine_state.replays_tape:
        lines += _tape(prep, state)
    else:
        lines.append(f"a call: {prep.work}")
        if family in TAPE_FROM and prep.is_python and prep.directions > 1:
            lines.append("engine='tape' (the default of a prepared call) would replay a tape "
                         "instead: " + ("one reverse sweep per call" if family == "gradient"
                                        else "reverse mode, without evaluating f"))
    return Explanation(lines)


def _tape(prep: Prep, state: Any) -> list[str]:
    lines: list[str] = []
    if state.delegated:
        lines.append(f"a call: {prep.work}")
        return lines
    lines.append(f"a call: {prep.work}")
    if state.tape is None:
        lines.append("not yet called: the first call traces f once and records its tape")
        return lines
    primal, derived = len(state.primal.instrs), len(state.tape.instrs)
    lines.append(f"its tape: {primal} instructions of f's values, {derived} in the derivative "
                 f"tape replayed; {state.captured_bytes} bytes of constant arrays compared "
                 "with their copies before each call")
    watched = state.python_state
    if watched is not None:
        lines.append(f"before each call: {watched.reads} reads of the Python state f reaches "
                     "compared (a change records f anew)")
    lines.append(f"so far: f traced {state.traces} time(s), {state.records - 1} guard "
                 f"failure(s); {state.forward_calls} call(s) answered by the dual engine "
                 "(partials that are not finite)")
    return lines

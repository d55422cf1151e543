"""cyad's warnings: a category of their own, each given once per prep (or per function)."""
import warnings


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

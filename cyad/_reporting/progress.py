"""The progress of a long run, when asked for (``progress=True``): cyad.at_points' points,
sparsity detection's instructions. A tqdm bar where tqdm is installed, else one line on
stderr, rewritten at most every half second (and at the end)."""
import sys
import time
from typing import Any


class Progress:
    """`update(count)` as work is done, `close()` at the end (or use it as a context)."""

    def __init__(self, total: int, what: str, enabled: bool) -> None:
        self.total, self.what, self.done = total, what, 0
        self._bar: Any = None
        self._line = False
        if not enabled:
            return
        try:
            from tqdm.auto import tqdm  # type: ignore[import-untyped,import-not-found,unused-ignore]
        except ImportError:
            self._line = True
            self._started = self._shown = time.perf_counter()
            self._show()
        else:
            self._bar = tqdm(total=total, desc=what)

    def update(self, count: int) -> None:
        self.done += count
        if self._bar is not None:
            self._bar.update(count)
        elif self._line:
            self._show()

    def _show(self) -> None:
        now = time.perf_counter()
        if now - self._shown < 0.5 and 0 < self.done < self.total:
            return
        self._shown = now
        percent = 100 * self.done // max(self.total, 1)
        elapsed = now - self._started
        print(f"\r{self.what}: {self.done}/{self.total} ({percent}%), {elapsed:.1f} s",
              end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._line:
            print(file=sys.stderr, flush=True)
        self._bar, self._line = None, False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

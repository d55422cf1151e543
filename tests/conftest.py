import itertools
import os
import tempfile

import pytest


def _allocations(fn, loops):
    """Allocator calls made while running fn `loops` times under memray.

    The loop itself allocates nothing (itertools.repeat yields one cached object).
    memray makes CPython create a frame object for every Python-level call while
    it tracks; those records (native stack through call_trace /
    _PyFrame_GetFrameObject) are the tracker's own and are left out.
    """
    import memray

    skipped = {memray.AllocatorType.FREE, memray.AllocatorType.MUNMAP,
               memray.AllocatorType.PYMALLOC_FREE}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.bin")
        with memray.Tracker(path, trace_python_allocators=True, native_traces=True):
            for _ in itertools.repeat(None, loops):
                fn()
        count = 0
        for record in memray.FileReader(path).get_allocation_records():
            if record.allocator in skipped:
                continue
            stack = [frame[0] for frame in record.native_stack_trace()]
            if "call_trace" in stack or "_PyFrame_GetFrameObject" in stack:
                continue
            count += record.n_allocations
    return count


@pytest.fixture
def allocations_per_call():
    """Heap allocations per call of fn: counted at two loop lengths and subtracted."""
    pytest.importorskip("memray")

    def measure(fn, short=1000, long=2000):
        fn()
        return (_allocations(fn, long) - _allocations(fn, short)) / (long - short)

    return measure

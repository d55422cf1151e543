# Type stubs of cyad/_tape/replay.pyx: the compiled replay of a lowered tape.

PARALLEL_FROM: int

# Type stubs of cyad/_dual/kernels.pyx: its loops are C-level only (no Python names).

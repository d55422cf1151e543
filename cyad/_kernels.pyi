# Type stubs of cyad/_kernels.pyx: its loops are C-level only (no Python names).

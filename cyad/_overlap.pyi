# Type stubs of cyad/_overlap.pyx: nothing Python-visible (its functions are C).

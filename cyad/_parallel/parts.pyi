# Type stubs of cyad/_parallel/parts.pyx: nothing Python-visible (its functions are C).

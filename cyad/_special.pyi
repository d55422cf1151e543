# cyad._special exports C functions only (cyad/_special.pxd), nothing for Python.

# cyad._rules.special_kernels exports C functions only (cyad/_rules/special_kernels.pxd), nothing for Python.

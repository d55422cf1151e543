"""The elementary derivative rules, each written once.

`table` holds every elementary function's value, first and second derivatives (C
expressions) and test domain; the build generates `rules.pxd` from it (the compiled rules
every engine inlines, with `helpers.pxd`, and SciPy's kernels in `special_kernels`);
`derivatives` reads the first partials as compositions of the table's own operations
(which differentiate to any order); `arrays` applies a rule's columns over whole arrays.
"""

"""The tape engine: f recorded once, its derivatives derived as programs, replayed compiled.

`program` (a tape's Vars and instructions) with the table of instruction kinds
`kind_table` and each kind's rules `instructions` (its meaning in NumPy, its derivatives,
its sparsity); `trace` (tracer arrays recording f); `transform` (forward
lanes and the reverse sweep of a tape) and `recipes` (each operator family's chain of
them); `lowering` (a tape lowered to one arena and a code table) and `replay` (the nogil
run); `engine` (the engine behind a prep), `state` (the Python state a tape froze) and
`function` (`cyad.record`).
"""

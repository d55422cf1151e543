"""What cyad tells its users: `warnings` (`cyad.CyadWarning` and its texts), `explain`
(`cyad.explain`: what a prep runs and why), `progress` (`progress=True`'s bar or line),
`profiling` and its compiled clock `profile` (`cyad.profile`, `allocations_per_call`,
`python -m cyad`), `supported` (the supported-functions table, read off the rule and
primitive tables).
"""

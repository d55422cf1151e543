"""Work in parallel: cyad's one pool of POSIX threads (`threads`, over `pool.h`), an
operator's call in parts on them (`parts`) or through a map-like (`parts_map`),
`cyad.at_points` (`points`, with its compiled loop over a batch's rows, `points_loop`),
and the preps a process keeps for them (`prep_cache`).
"""

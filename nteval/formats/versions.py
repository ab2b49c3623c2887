"""Versions of what nteval caches on disk: bump one when the way that thing is computed changes,
and every cache of it made before is recomputed (never reused under a stale meaning). Cluster
workers must run the same versions as their client (:func:`nteval.cluster.check_workers`)."""

#: runs (2: exact Lucene scores, fast path; 3: RM3 given fb_terms and fb_docs in Anserini's order,
#: they were swapped)
RUN_FORMAT = 3
#: grid cells: what a cell stores, or how it is computed
CELL_FORMAT = 2

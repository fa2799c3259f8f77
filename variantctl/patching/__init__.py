"""PURE: patchset operations on source text (libcst), state detection and planning.

Nothing here touches files or processes: callers hand in bytes and get result
values back (``variantctl.targets.patchrun`` does the reading and writing).
``plan`` says what a transform would do to each copy, ``decide`` what apply,
rollback and recovery then do (from ledger records, hashes, backup facts),
``outcomes`` holds the result values the renderers show.
"""

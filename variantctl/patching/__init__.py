"""PURE: patchset operations on source text (libcst), state detection and planning.

Nothing here touches files or processes: callers hand in bytes and get result
values back (``variantctl.targets.patchrun`` does the reading and writing).
"""

"""``variantctl tune``: the best configuration of a variant for a workload, found with an
optimiser over a space of settings, every candidate measured as a sweep point
(docs/tune.md)."""

"""``variantctl report`` and ``compare``: the seeds' tables and plots from run records.

PURE except :mod:`variantctl.report.plots` (matplotlib, imported inside its
functions) and :mod:`variantctl.report.load` (reads the local run store). The
input is data (:class:`~variantctl.report.model.ReportInput`: runs with their
benchmark results, plus an optional sweep plan's skipped points), so a sweep's
state file and a list of run ids feed the same report.
"""

"""Run records: what a launch started on a host (server record) and what it
concluded (run.json in ``runs/<date>-<variant>-<n>/``)."""

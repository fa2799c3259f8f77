"""Run records: what a launch started on a host (server record) and what it
concluded (``runs/<date>-<variant>-<key>-<seq>/run.json``, see runs/store.py)."""

"""Launch orchestration: pre-checks, start, watch, verdict, archive, stop."""

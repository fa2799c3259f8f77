"""Rendering: the only place that prints. Rich for people, JSON for scripts."""

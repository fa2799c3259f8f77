"""The project side of a command: load what a library call needs from the project's
YAML (through ``config/``) and the hosts a command names.

Only the CLI (and the scripts around it) import this package; ``launch/``, ``bench/``
and ``sweeps/`` receive its results as values, so none of them depends on the loader.
"""

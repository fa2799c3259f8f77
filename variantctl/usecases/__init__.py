"""Use cases: one function per command family, below the CLI.

Each takes a typed request (the command's parsed options) and the command's
:class:`~variantctl.env.Environment` or :class:`~variantctl.project.loaded.Project`,
does the work through the library (config, runs, launch, bench, sweeps…) and returns
a typed, frozen result; it prints nothing (notes go to the caller's callback) and picks
no exit code. A command module in ``cli/`` parses options, calls one use case,
renders its result and maps it to an exit code.
"""

"""The CLI's terminal: the one place output is printed.

``render/`` turns values into blocks and JSON and never prints; the command modules
in ``cli/`` parse options, call a use case and pick the exit code. What is left is
the terminal side they share: printing blocks and JSON documents (``output.py``), an
error that ends a command (``failure.py``), and the live displays a command hands to
a use case to report progress to while it runs (``launchview.py``, ``benchview.py``,
``sweepprogress.py``). Nothing here imports ``cli/``.
"""

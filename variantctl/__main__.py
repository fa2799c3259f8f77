"""``python -m variantctl`` and the ``variantctl`` console script."""

import gc

# A command is a short-lived process building large short-lived object graphs
# (a 3,300-line file is ~45,000 libcst nodes; imports create thousands of
# functions and classes). The cyclic collector would walk them again and again
# for nothing, so it starts paused; long-running commands (launch, watch,
# logs --follow, …) switch it back on when they are looked up (cli.LazyGroup).
gc.disable()

from variantctl.cli import main  # noqa: E402


def entry() -> None:
    """Console-script entry point (see pyproject.toml)."""
    main()


if __name__ == "__main__":
    entry()

"""The ``variantctl`` command group.

Subcommands live one per module and are imported only when invoked, so
``variantctl --help`` stays as cheap as importing click (no libcst, fabric,
deepdiff or rich at start-up).
"""

from __future__ import annotations

import gc
import os
import sys
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

import click

from variantctl import __version__
from variantctl.errors import VariantctlError
from variantctl.exitcodes import ExitCode
from variantctl.terminal.failure import (
    JSON_OUTPUT,
    json_requested,
    report_click_error,
    report_error,
)

if TYPE_CHECKING:
    from variantctl.env import Environment

# name -> (module, attribute, one-line help). The help is duplicated here on
# purpose: listing commands must not import them.
COMMANDS: dict[str, tuple[str, str, str]] = {}

#: commands that finish in about a second; every other one runs with the cyclic
#: garbage collector on (the entry point starts with it paused, see __main__.py)
SHORT_LIVED = frozenset(
    {"patch", "apply", "status", "rollback", "list", "show", "render", "diff", "check",
     "classify"}
)


def register(name: str, module: str, attr: str, short_help: str) -> None:
    COMMANDS[name] = (module, attr, short_help)


register("patch", "variantctl.cli.patch", "patch", "List, show and diff patchsets.")
register("apply", "variantctl.cli.apply", "apply", "Apply a patchset to every root of a host.")
register("status", "variantctl.cli.status", "status", "Show per-root, per-operation patch state.")
register("rollback", "variantctl.cli.rollback", "rollback", "Undo an applied patchset.")
register("list", "variantctl.cli.list_variants", "list_variants", "List launch variants.")
register("show", "variantctl.cli.show", "show", "Show a resolved variant.")
register("render", "variantctl.cli.render", "render", "Render what launch would run.")
register("diff", "variantctl.cli.diff", "diff", "Compare two variants.")
register("check", "variantctl.cli.check", "check", "Pre-flight checks for variants.")
register("classify", "variantctl.cli.classify", "classify", "Diagnose vLLM startup logs.")
register("hosts", "variantctl.cli.hosts", "hosts", "List and check hosts.")
register("locate", "variantctl.cli.locate", "locate", "Find every copy of a module on a host.")
register("launch", "variantctl.cli.launch", "launch", "Start a variant and diagnose its startup.")
register("watch", "variantctl.cli.watch", "watch", "Attach to a started variant.")
register("ps", "variantctl.cli.ps", "ps", "List running variants.")
register("stop", "variantctl.cli.stop", "stop", "Stop running variants.")
register("logs", "variantctl.cli.logs", "logs", "Print a variant's server log.")
register("bench", "variantctl.cli.bench", "bench", "Benchmark a running variant or URL.")
register("runs", "variantctl.cli.runs", "runs", "List and show archived runs.")
register("sweep", "variantctl.cli.sweep", "sweep", "Run a grid of variants: plan, launch, bench.")
register("report", "variantctl.cli.report", "report", "Write a report of a sweep or runs.")
register("compare", "variantctl.cli.compare", "compare", "Compare two runs.")
register("bisect", "variantctl.cli.bisect", "bisect",
         "Find which setting makes the difference between two runs.")
register("tune", "variantctl.cli.tune", "tune",
         "Search a space of settings for a variant's best configuration.")
register("profile", "variantctl.cli.profile", "profile", "Show a run's profile breakdown.")


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        if cmd_name not in SHORT_LIVED:
            gc.enable()
        module = import_module(entry[0])
        cmd = getattr(module, entry[1])
        assert isinstance(cmd, click.Command)
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(n, COMMANDS[n][2]) for n in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="variantctl")
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    envvar="VARIANTCTL_PROJECT",
    help="Project directory holding patchsets/ and variants/ (default: found from cwd).",
)
@click.pass_context
def cli(ctx: click.Context, project: Path | None) -> None:
    """Patch, launch and diagnose vLLM server variants on local, SSH and SLURM hosts."""
    # checked when a command starts (common.pass_env), so the error can be JSON
    named_by = None
    if project is not None:
        project = project.expanduser()  # VARIANTCTL_PROJECT=~/p, quoted, reaches us as is
        from_env = ctx.get_parameter_source("project") == click.core.ParameterSource.ENVIRONMENT
        named_by = "VARIANTCTL_PROJECT" if from_env else "--project"
    if ctx.obj is None:
        from variantctl.env import Environment

        ctx.obj = Environment.from_process(project)
        ctx.obj.project_named_by = named_by
    elif project is not None:
        ctx.obj.project_dir = project.resolve()
        ctx.obj.project_named_by = named_by


def run(argv: list[str] | None = None, env: Environment | None = None) -> int:
    """Run the CLI and return its exit code; expected errors print one message, no traceback.

    Tests call this in-process with an Environment whose consoles write to buffers.
    A command returns its exit code (None for success). Every error goes through
    :func:`report_error`, which also prints it as JSON under ``--json``.
    """
    token = JSON_OUTPUT.set(False)
    try:
        return _run(sys.argv[1:] if argv is None else argv, env)
    finally:
        JSON_OUTPUT.reset(token)


def _run(argv: list[str], env: Environment | None) -> int:
    try:
        rv = cli.main(args=argv, prog_name="variantctl", standalone_mode=False, obj=env)
    except click.exceptions.Abort:
        return report_error(VariantctlError("aborted", exit_code=ExitCode.INTERRUPTED), env)
    except click.ClickException as exc:
        return report_click_error(exc, env, as_json=JSON_OUTPUT.get() or json_requested(argv))
    except VariantctlError as exc:
        return report_error(exc, env)
    except KeyboardInterrupt:
        return report_error(VariantctlError("interrupted", exit_code=ExitCode.INTERRUPTED), env)
    except BrokenPipeError:
        # `variantctl ... | head` is normal use
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK
    except Exception as exc:  # a bug: say so briefly, full trace only on request
        if os.environ.get("VARIANTCTL_DEBUG"):
            raise
        return report_error(VariantctlError(
            f"internal error: {type(exc).__name__}: {exc}",
            hint="this is a bug in variantctl; rerun with VARIANTCTL_DEBUG=1 for the traceback",
            exit_code=ExitCode.INTERNAL), env)
    # click hands back what the command returned (standalone_mode=False)
    return int(rv) if isinstance(rv, int) else ExitCode.OK


def main() -> None:
    """Console-script entry point."""
    sys.exit(run())


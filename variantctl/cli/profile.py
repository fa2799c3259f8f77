"""``variantctl profile RUN [--trace FILE] [--json]``: the profile breakdown a
``bench --profile`` stored in a run, and its raw events as a Chrome trace.

Exit codes: 0 shown; 1 the trace file cannot be written; 2 no such run, a run
without profile files, or a stored profile file that cannot be read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from variantctl.cli.common import json_option, pass_env
from variantctl.env import Environment

#: a stored profile-*.json larger than this is refused rather than read into memory
MAX_PROFILE_JSON = 512 << 20


@click.command("profile")
@click.argument("run_id", metavar="RUN")
@click.option("--trace", "trace", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the run's events as a Chrome trace (chrome://tracing, Perfetto).")
@json_option
@pass_env
def profile(env: Environment, run_id: str, trace: Path | None, as_json: bool) -> None:
    """Show the profile breakdown stored in RUN (an id or unique prefix)."""
    from variantctl.bench.profile import trace_from_document, write_trace_file
    from variantctl.cli.output import print_json
    from variantctl.errors import NotFoundError, VariantctlError
    from variantctl.render.profile import breakdown_tables
    from variantctl.runs.store import RunStore

    d = RunStore(env.runs_dir).find(run_id)
    files = sorted(d.path.glob("profile-*.json"))
    if not files:
        raise NotFoundError(f"run {d.run_id} has no profile (no profile-*.json in {d.path})",
                            hint=f"variantctl bench {d.variant} --profile collects one")
    docs: list[dict[str, Any]] = []
    for path in files:
        try:
            if path.stat().st_size > MAX_PROFILE_JSON:
                raise ValueError("too large")
            doc = json.loads(path.read_text("utf-8"))
            if not isinstance(doc, dict) or not isinstance(doc.get("levels"), list):
                raise ValueError("not a variantctl profile document")
        except (OSError, ValueError) as exc:
            raise VariantctlError(f"{path}: cannot be read as a profile: {exc}",
                                  hint="bench --profile writes these; this one is damaged"
                                  ) from None
        docs.append(doc)
    levels = [{"file": p.name, "level": lv.get("label", ""), **lv.get("breakdown", {})}
              for p, doc in zip(files, docs, strict=True) for lv in doc["levels"]]
    if trace is not None:
        merged = {"levels": [lv for doc in docs for lv in doc["levels"]]}
        write_trace_file(trace, trace_from_document(merged), "--trace")
        env.stderr.print(f"Chrome trace written {trace}", markup=False, highlight=False,
                         soft_wrap=True)
    if as_json:
        print_json(env, {"run_id": d.run_id, "levels": levels})
        return
    for table in breakdown_tables(d.variant, levels):
        env.stdout.print(table)


"""Rendering of classify results: rich text for people, the documented JSON for scripts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from variantctl.jsontypes import JsonObject
from variantctl.logs.bounded import visible
from variantctl.logs.expect import Mismatch
from variantctl.logs.result import SCHEMA, Match, Result
from variantctl.render.output import Block

if TYPE_CHECKING:
    from rich.console import RenderableType

Row = tuple[str, Result, Sequence[Mismatch]]
_STYLE = {"ok": "green", "failed": "red", "hang": "yellow", "unknown": "magenta",
          "warning": "yellow"}
_FACT_ROWS = (
    ("vLLM version", "vllm_version"),
    ("engine", "engine"),
    ("attention backend", "attention_backend"),
    ("GPU blocks", "gpu_blocks"),
    ("KV cache tokens", "kv_cache_tokens"),
    ("max concurrency", "max_concurrency"),
    ("graph capture (s)", "graph_capture_seconds"),
    ("engine init (s)", "engine_init_seconds"),
    ("startup to ready (s)", "startup_seconds"),
    ("server address", "server_address"),
)
_CONFIG_ROWS = (
    "enforce_eager", "disable_custom_all_reduce", "tensor_parallel_size",
    "pipeline_parallel_size", "max_seq_len", "enable_chunked_prefill", "num_scheduler_steps",
    "enable_prefix_caching", "use_async_output_proc", "dtype", "quantization", "model",
)


def results_json(rows: Sequence[Row], expect: str | None) -> JsonObject:
    """``{"schema": …, "logs": [{"path": …, <result>, "expect": …}]}``."""
    logs: list[JsonObject] = []
    for path, result, mismatches in rows:
        item: JsonObject = {"path": path, **result.to_json()}
        item["expect"] = None if expect is None else {
            "variant": expect,
            "ok": not mismatches,
            "mismatches": [m.to_json() for m in mismatches],
        }
        logs.append(item)
    return {"schema": SCHEMA, "logs": logs}


def result_blocks(rows: Sequence[Row], expect: str | None, *, explain: bool) -> list[Block]:
    """Each log's verdict, evidence, fix, facts and expectations (stdout)."""
    from rich.padding import Padding
    from rich.table import Table

    blocks: list[Block] = []

    def add(body: RenderableType = "", *, highlight: bool | None = None) -> None:
        blocks.append(Block(body, highlight=highlight))

    for i, (path, r, mismatches) in enumerate(rows):
        if i:
            add()
        style = _STYLE.get(r.kind, "")
        sig = f" {r.signature}" if r.signature else ""
        add(f"[bold]{_safe(path)}[/]: [{style}]{r.kind.upper()}{_safe(sig)}[/]"
                  f" — {_safe(r.title)}")
        add(f"  {_safe(r.message)}", highlight=False)
        add(f"  phase: {r.phase}", highlight=False)
        if r.note:
            add(f"  note: {_safe(r.note)}", highlight=False)
        for ev in r.evidence:
            add(f"  [dim]{ev.line:>6} |[/] {_safe(ev.text)}", highlight=False)
        if r.remediation:
            add(f"  [bold]fix:[/] {_safe(r.remediation)}", highlight=False)
        if r.warnings:
            add(f"  warnings ({len(r.warnings)}):")
            for w in r.warnings:
                blocks += _match_blocks(w, explain)
        if r.also and (explain or r.kind != "ok"):
            add(f"  also seen ({len(r.also)}):")
            for a in r.also:
                blocks += _match_blocks(a, explain)
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column("fact", style="bold", no_wrap=True)
        table.add_column("value", overflow="fold")
        f = r.facts
        for label, key in _FACT_ROWS:
            value = f.get(key)
            if value is not None or explain:
                table.add_row(label, _fmt(value))
        keys = list(f.config) if explain else [k for k in _CONFIG_ROWS if k in f.config]
        for key in keys:
            table.add_row(key, _fmt(f.config[key]))
        if explain:
            for key, value in f.requested.items():
                table.add_row(f"requested {key}", _fmt(value))
        if table.row_count:
            add("  facts:")
            add(Padding(table, (0, 0, 0, 4), expand=False))
        findings = (*f.config_differences, *f.default_differences)
        if findings:
            add(f"  [yellow]findings ({len(findings)}):[/]")
            for d in findings:
                add(f"    - {_safe(str(d['message']))}", highlight=False)
        if expect is not None:
            if mismatches:
                add(f"  [red]expect {_safe(expect)}: {len(mismatches)} mismatch(es)[/]")
                for m in mismatches:
                    add(f"    - {_safe(m.describe())}", highlight=False)
            else:
                add(f"  [green]expect {_safe(expect)}: facts match[/]")
    return blocks


def _match_blocks(m: Match, explain: bool) -> list[Block]:
    ev = m.evidence[0] if m.evidence else None
    where = f" (line {ev.line})" if ev else ""
    out = [Block(f"    - {m.signature}{where}: {_safe(m.message)}", highlight=False)]
    if explain and ev is not None:
        out.append(Block(f"      [dim]{_safe(ev.text)}[/]", highlight=False))
    return out


#: characters of one log-derived text shown in human output (JSON keeps the line as read)
_SHOWN = 1000


def _safe(text: str) -> str:
    """Log-derived text for the terminal: control characters made visible (an escape
    sequence in a log line must not reach the user's terminal raw), rich markup escaped,
    and clipped so that one enormous line cannot flood it."""
    from rich.markup import escape

    if len(text) > _SHOWN:
        text = text[:_SHOWN] + f" …[{len(text) - _SHOWN} more characters]"
    return escape(visible(text))


def _fmt(value: object) -> str:
    if value is None:
        return "-"
    return _safe(str(value))

"""The local archive of launches: ``runs/<date>-<variant>-<n>/`` with ``run.json``,
``server.log`` (the host's log, copied) and ``launch.sh`` (the uploaded script)."""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any

from variantctl.runs.record import safe_name


def new_run_dir(runs_dir: Path, variant: str, when: datetime) -> Path:
    """Create ``runs/<YYYY-MM-DD>-<variant>-<n>/`` with the next free ``n``."""
    runs_dir.mkdir(parents=True, exist_ok=True)
    prefix = f"{when.strftime('%Y-%m-%d')}-{safe_name(variant)}-"
    taken = [p.name[len(prefix):] for p in runs_dir.iterdir() if p.name.startswith(prefix)]
    n = max((int(t) for t in taken if t.isdigit()), default=0) + 1
    while True:
        path = runs_dir / f"{prefix}{n}"
        try:
            path.mkdir()
            return path
        except FileExistsError:  # a parallel launch took it
            n += 1


def write_file_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_run_json(run_dir: Path, data: dict[str, Any]) -> Path:
    path = run_dir / "run.json"
    text = json.dumps(data, indent=2, sort_keys=False, default=str, ensure_ascii=False)
    write_file_atomic(path, (text + "\n").encode())
    return path


def read_run_json(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None

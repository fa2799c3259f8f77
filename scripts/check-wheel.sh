#!/usr/bin/env bash
# The package as users get it: build the sdist and, from it, the wheel (python -m build:
# a file the sdist lacks fails here, as it would for users), install
# the wheel into a fresh venv outside the checkout, and run the console script there:
# --version (equal to the installed metadata), --help, and classify on a shipped log
# fixture (the signature catalog is package data: found from the wheel, not the tree).
#
# Kept cheap for `make test`: the build's isolated environment and the installs reuse
# pip's cache, and the fresh venv gets variantctl's dependencies from the development
# venv's site-packages as a plain path (a .pth line: that directory's own .pth files,
# the editable install's finder among them, are NOT run), so only the wheel is
# installed and `import variantctl` can only find the wheel's copy. The script checks
# that it does. Prints its seconds at the end.
#
#   scripts/check-wheel.sh [VENV]     VENV: the development venv (default .venv)
set -euo pipefail
t0=$(date +%s)
repo=$(cd "$(dirname "$0")/.." && pwd)
dev=${1:-$repo/.venv}
work=$(mktemp -d "${TMPDIR:-/tmp}/variantctl-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

"$dev/bin/python" -m build --outdir "$work/dist" "$repo" >"$work/build.log" 2>&1 \
    || { cat "$work/build.log"; echo "check-wheel: build failed"; exit 1; }
whl=$(ls "$work"/dist/variantctl-*.whl)
ls "$work"/dist/variantctl-*.tar.gz >/dev/null

python3 -m venv "$work/venv"
site=$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
devsite=$("$dev/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
echo "$devsite" >"$site/zz-variantctl-deps.pth"
"$work/venv/bin/python" -m pip install -q --no-deps --disable-pip-version-check "$whl"

cd "$work"  # outside the checkout: nothing there can be imported by accident
py="$work/venv/bin/python"
vc="$work/venv/bin/variantctl"
where=$("$py" -c 'import variantctl; print(variantctl.__file__)')
case "$where" in
    "$site"/*) ;;
    *) echo "check-wheel: variantctl imported from $where, not the wheel in $site"; exit 1 ;;
esac
meta=$("$py" -c 'import importlib.metadata as m; print(m.version("variantctl"))')
shown=$("$vc" --version)
[ "$shown" = "variantctl, version $meta" ] \
    || { echo "check-wheel: --version says '$shown', metadata $meta"; exit 1; }
"$vc" --help | grep -q "classify" || { echo "check-wheel: --help lists no commands"; exit 1; }
"$py" -c 'import importlib.resources as r; assert (r.files("variantctl") / "py.typed").is_file()'
# a shipped fixture whose diagnosis needs the signature catalog (package data)
log="$repo/tests/fixtures/logs/v0_6/batched-tokens-below-model-len--ansi.log"
rc=0
out=$("$vc" classify --json "$log") || rc=$?
sig=$(echo "$out" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["logs"][0]["signature"])')
[ "$sig" = "batched-tokens-below-model-len" ] && [ "$rc" -eq 1 ] \
    || { echo "check-wheel: classify from the wheel: exit $rc, signature $sig"; exit 1; }
echo "check-wheel: $(basename "$whl") and the sdist built; from a fresh venv --version" \
     "($meta), --help and classify (exit $rc) work; $(( $(date +%s) - t0 ))s"

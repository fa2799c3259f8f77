#!/usr/bin/env bash
# The suite's cost from a fresh clone: wall time, CPU-seconds and idle share of `.ci/run`.
#
#   bash benchmarks/suite_cost.sh [WORKERS]      (root: it makes a cpuacct cgroup)
#
# The whole run goes into one cgroup (cgroup v1 cpuacct), so every process it starts
# is counted: pytest's workers, the real vLLM servers, the lab's sshd sessions, SLURM
# jobs. The idle share comes from /proc/stat over the same span: near 0 % means the run
# is CPU-bound, and only fewer CPU-seconds make it shorter. The README's suite figures
# (quiet: 3 workers 1,265-1,280 CPU-s, 4 workers 1,379-1,422) come from this script.
set -euo pipefail
workers=${1:-3}
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
clone=$(mktemp -d)/variantctl
git clone -q "$repo" "$clone"
cg=/sys/fs/cgroup/cpuacct/variantctl-suite-$$
mkdir -p "$cg"
echo 0 > "$cg/cpuacct.usage"
read -r _ u n s i io irq sirq st _ < /proc/stat
idle0=$((i + io)); total0=$((u + n + s + i + io + irq + sirq + st))
t0=$(date +%s)
rc=0
(cd "$clone" && echo $BASHPID > "$cg/tasks" && exec env CI=true TEST_WORKERS="$workers" \
    bash .ci/run) > "$clone.log" 2>&1 || rc=$?
t1=$(date +%s)
read -r _ u n s i io irq sirq st _ < /proc/stat
idle1=$((i + io)); total1=$((u + n + s + i + io + irq + sirq + st))
cpu=$(awk -v ns="$(cat "$cg/cpuacct.usage")" 'BEGIN { printf "%.0f", ns / 1e9 }')
grep -E "^(unit|ssh|slurm|vllm|all) |passed|failed" "$clone.log" | tail -8 || true
echo "suite_cost: workers $workers, exit $rc, wall $((t1 - t0)) s," \
     "CPU $cpu s, idle $((100 * (idle1 - idle0) / (total1 - total0))) % (log: $clone.log)"
rmdir "$cg" 2>/dev/null || true
exit $rc

#!/usr/bin/env bash
# The SLURM tier (tests/slurm) runs a real single-node cluster on this machine:
# Debian's slurmctld, slurmd, munge and the client commands. The test fixtures
# generate slurm.conf for this machine and start/stop the daemons themselves
# (no systemd); this only installs the packages.
set -euo pipefail
if command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
    && command -v munged >/dev/null && command -v sbatch >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "SLURM is missing; install it (apt-get install slurmctld slurmd munge slurm-client)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# the packages' postinst would start the daemons under systemd/init: keep them off
policy=/usr/sbin/policy-rc.d
created=0
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy" && created=1
fi
trap 'if [ "$created" = 1 ]; then rm -f "$policy"; fi' EXIT
apt-get -o DPkg::Lock::Timeout=600 update -qq
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends slurmctld slurmd munge slurm-client >/dev/null

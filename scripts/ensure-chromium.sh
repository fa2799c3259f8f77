#!/usr/bin/env bash
# The report tests open `variantctl report --format html` in headless Chromium
# (Debian's chromium package): a screenshot with the plots drawn, no console errors.
# Tests run it themselves; this only installs it.
set -euo pipefail
if command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "chromium is missing; install it (apt-get install chromium)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null

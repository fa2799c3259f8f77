#!/usr/bin/env bash
# The SSH tier runs against a real OpenSSH server on 127.0.0.1 (Debian's
# openssh-server). Tests start their own sshd on a free port; this only installs it.
set -euo pipefail
if [ -x /usr/sbin/sshd ] && command -v ssh-keygen >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "openssh-server is missing; install it (apt-get install openssh-server)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq openssh-server openssh-client >/dev/null

#!/usr/bin/env bash
# Installs Debian's haproxy, the load balancer in front of the two mcpx
# replicas of tests/replicas, when it is missing (as root, or with
# passwordless sudo), and prints the binary's path on its last line:
#
#   MCPX_HAPROXY=$(./scripts/haproxy-tools.sh | tail -n 1)
#
# With --missing-packages it installs nothing and prints the Debian
# packages it would install, one a line (scripts/test.sh installs them all
# at once).
set -euo pipefail

missing=()
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
if [ "${1:-}" = "--missing-packages" ]; then
	[ "${#missing[@]}" -eq 0 ] || printf '%s\n' "${missing[@]}"
	exit 0
fi
"$(dirname "${BASH_SOURCE[0]}")/debian-packages.sh" "${missing[@]}"
# Debian puts it in /usr/sbin, which a non-root PATH may lack.
command -v haproxy 2>/dev/null || echo /usr/sbin/haproxy

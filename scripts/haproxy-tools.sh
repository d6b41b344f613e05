#!/usr/bin/env bash
# Installs Debian's haproxy, the load balancer in front of the two mcpx
# replicas of tests/replicas, when it is missing (as root, or with
# passwordless sudo), and prints the binary's path on its last line:
#
#   MCPX_HAPROXY=$(./scripts/haproxy-tools.sh | tail -n 1)
set -euo pipefail

if ! command -v haproxy >/dev/null 2>&1 && [ ! -x /usr/sbin/haproxy ]; then
	if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else sudo="none"; fi
	if [ "$sudo" = "none" ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "haproxy-tools: the replica tests need haproxy; install it (Debian: apt-get install haproxy) and run again" >&2
		exit 1
	fi
	echo "haproxy-tools: installing haproxy from Debian" >&2
	$sudo apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends haproxy >&2
fi
# Debian puts it in /usr/sbin, which a non-root PATH may lack.
command -v haproxy 2>/dev/null || echo /usr/sbin/haproxy

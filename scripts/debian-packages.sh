#!/usr/bin/env bash
# Installs the Debian packages named on the command line that are not
# installed yet, with one apt-get update for all of them (as root, or with
# passwordless sudo). The *-tools.sh scripts install theirs through it, and
# scripts/test.sh gathers every script's missing packages (each prints
# them with --missing-packages) into one call: dpkg takes one installer at
# a time, and each apt-get update costs a fetch of the package lists.
#
#   ./scripts/debian-packages.sh PACKAGE...
set -euo pipefail

missing=()
for p in "$@"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ "${#missing[@]}" -gt 0 ] || exit 0

if [ "$(id -u)" -eq 0 ]; then
	sudo=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	sudo="sudo -n"
else
	sudo="none"
fi
if [ "$sudo" = "none" ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "debian-packages: missing ${missing[*]}; install them (Debian: apt-get install ${missing[*]}) and run again" >&2
	exit 1
fi
echo "debian-packages: installing ${missing[*]}" >&2
$sudo apt-get update -qq >&2
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2

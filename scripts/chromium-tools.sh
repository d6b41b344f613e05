#!/usr/bin/env bash
# Installs Debian's chromium, the headless browser the UI tests drive
# (web/ui_browser_test.go via chromedp), when it is missing, and prints the
# binary's path on its last line:
#
#   MCPX_CHROMIUM=$(./scripts/chromium-tools.sh | tail -n 1)
#
# Safe to run again and again: nothing is installed when a chromium is on
# PATH (or MCPX_CHROMIUM names one). With --missing-packages it installs
# nothing and prints the Debian packages it would install, one a line.
set -euo pipefail

find_chromium() {
	if [ -n "${MCPX_CHROMIUM:-}" ] && [ -x "$MCPX_CHROMIUM" ]; then
		echo "$MCPX_CHROMIUM"
		return 0
	fi
	for name in chromium chromium-browser google-chrome-stable google-chrome; do
		if command -v "$name" >/dev/null 2>&1; then
			command -v "$name"
			return 0
		fi
	done
	return 1
}

missing=()
# fonts-liberation: without a font the screenshots show boxes for text.
find_chromium >/dev/null || missing+=(chromium fonts-liberation)
if [ "${1:-}" = "--missing-packages" ]; then
	[ "${#missing[@]}" -eq 0 ] || printf '%s\n' "${missing[@]}"
	exit 0
fi
if [ "${#missing[@]}" -gt 0 ]; then
	"$(dirname "${BASH_SOURCE[0]}")/debian-packages.sh" "${missing[@]}"
fi
bin=$(find_chromium) || { echo "chromium-tools: chromium installed but not found on PATH" >&2; exit 1; }
echo "$bin"

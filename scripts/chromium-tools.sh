#!/usr/bin/env bash
# Installs Debian's chromium, the headless browser the UI tests drive
# (web/ui_browser_test.go via chromedp), when it is missing, and prints the
# binary's path on its last line:
#
#   MCPX_CHROMIUM=$(./scripts/chromium-tools.sh | tail -n 1)
#
# Safe to run again and again: nothing is installed when a chromium is on
# PATH (or MCPX_CHROMIUM names one).
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

if ! bin=$(find_chromium); then
	echo "chromium-tools: installing Debian's chromium (apt-get)" >&2
	if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo="none"; fi
	if [ "$sudo" = "none" ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "chromium-tools: the UI tests need chromium; install it (Debian: apt-get install chromium) and run again" >&2
		exit 1
	fi
	$sudo apt-get update -qq >&2
	# fonts-liberation: without a font the screenshots show boxes for text.
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium fonts-liberation >&2
	bin=$(find_chromium) || { echo "chromium-tools: chromium installed but not found on PATH" >&2; exit 1; }
fi

echo "$bin"

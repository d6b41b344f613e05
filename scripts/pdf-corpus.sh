#!/usr/bin/env bash
# Makes the PDF corpus of package inspect again (inspect/testdata/pdf) with
# real generators, and poppler's reading of each file as the reference:
# Chromium's print to PDF, Ghostscript's ps2pdf and pdfimage8, qpdf's
# rewrites, and edits that break the files as the field breaks them (see
# internal/pdfcorpus/generate). Installs what it needs when missing:
# Chromium (scripts/chromium-tools.sh), poppler, qpdf and Ghostscript
# (scripts/pdf-tools.sh), and the fonts the Chromium page names.
#
#   ./scripts/pdf-corpus.sh
#
# The files differ from run to run (dates, ids): commit them with the
# references only when the generators or the sources changed.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
MCPX_CHROMIUM=$(./scripts/chromium-tools.sh | tail -n 1)
export MCPX_CHROMIUM
./scripts/pdf-tools.sh >/dev/null

fonts=()
fc-list | grep -q DejaVuSerif || fonts+=(fonts-dejavu-core)
fc-list | grep -q DroidSansFallback || fonts+=(fonts-droid-fallback)
if [ "${#fonts[@]}" -gt 0 ]; then
	if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo="none"; fi
	if [ "$sudo" = "none" ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "pdf-corpus: the Chromium page needs ${fonts[*]}; install them and run again" >&2
		exit 1
	fi
	$sudo apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${fonts[@]}" >&2
fi

go run -tags pdfcorpus ./internal/pdfcorpus/generate -dir inspect/testdata/pdf
ls -l inspect/testdata/pdf

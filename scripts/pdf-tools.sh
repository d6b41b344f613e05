#!/usr/bin/env bash
# Installs the PDF tools of package inspect's corpus when they are missing
# (as root, or with passwordless sudo): poppler's pdftotext and pdfinfo,
# the reference the PDF reader's text is checked against, and qpdf and
# Ghostscript, which scripts/pdf-corpus.sh makes the corpus with. Prints
# pdftotext's path on its last line:
#
#   MCPX_PDFTOTEXT=$(./scripts/pdf-tools.sh | tail -n 1)
#
# Safe to run again and again: nothing is installed when all are on PATH.
# With --missing-packages it installs nothing and prints the Debian
# packages it would install, one a line.
set -euo pipefail

missing=()
command -v pdftotext >/dev/null 2>&1 && command -v pdfinfo >/dev/null 2>&1 || missing+=(poppler-utils)
command -v qpdf >/dev/null 2>&1 || missing+=(qpdf)
command -v ps2pdf >/dev/null 2>&1 || missing+=(ghostscript)
if [ "${1:-}" = "--missing-packages" ]; then
	[ "${#missing[@]}" -eq 0 ] || printf '%s\n' "${missing[@]}"
	exit 0
fi
"$(dirname "${BASH_SOURCE[0]}")/debian-packages.sh" "${missing[@]}"
command -v pdftotext

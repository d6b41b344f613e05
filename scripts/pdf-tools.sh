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
set -euo pipefail

missing=()
command -v pdftotext >/dev/null 2>&1 && command -v pdfinfo >/dev/null 2>&1 || missing+=(poppler-utils)
command -v qpdf >/dev/null 2>&1 || missing+=(qpdf)
command -v ps2pdf >/dev/null 2>&1 || missing+=(ghostscript)
if [ "${#missing[@]}" -gt 0 ]; then
	if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else sudo="none"; fi
	if [ "$sudo" = "none" ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "pdf-tools: the PDF corpus tests need ${missing[*]}; install them (Debian: apt-get install ${missing[*]}) and run again" >&2
		exit 1
	fi
	echo "pdf-tools: installing ${missing[*]} from Debian" >&2
	$sudo apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi
command -v pdftotext

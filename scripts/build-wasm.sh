#!/usr/bin/env bash
# Rebuilds the committed WASM presets (plugins/*/NAME.wasm, embedded in
# the mcpx binary) with TinyGo, exactly as the tests rebuild them to check
# that the committed copies are fresh. Run it after changing a preset or
# the Go guest SDK, then commit the .wasm files.
#
#   ./scripts/build-wasm.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="$PATH:/usr/local/go/bin"
fi
TINYGOROOT=$(./scripts/wasm-toolchains.sh | tail -n 1)
export TINYGOROOT
tinygo="$TINYGOROOT/bin/tinygo"

for dir in plugins/*/; do
	name=$(basename "$dir")
	[ -f "$dir/main.go" ] || continue
	echo "building plugins/$name/$name.wasm"
	"$tinygo" build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -ldflags='-X github.com/tidwall/gjson.disableModifiers=true' -o "plugins/$name/$name.wasm" "./plugins/$name"
done

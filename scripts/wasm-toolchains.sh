#!/usr/bin/env bash
# Installs the WASM guest toolchains the tests need, only what is missing,
# so it is cheap to run again:
#
#   - wabt (wat2wasm: the hand-written hostile guests of layers/wasm);
#   - Debian's rustc 1.63 with the wasm32 standard library and lld-14
#     (Rust guests: /usr/bin/rustc --target wasm32-unknown-unknown);
#   - LLVM 19, clang 19, lld 19, wasi-libc and compiler-rt for wasm32,
#     then TinyGo v0.42.0 built from the Go module proxy against them
#     (binaryen gives it wasm-opt), into $MCPX_TOOLS/tinygo (default
#     ~/.cache/mcpx-tools/tinygo), reused on later runs. A module proxy
#     may serve single versions but no version lists, which `go install
#     …@v0.42.0` asks for, so the module's source is copied out of the
#     module cache and built there; it has no git submodules, so TinyGo's
#     wasm32 libc and compiler-rt come from Debian's prebuilt libraries
#     below.
#
# It prints the TinyGo root on its last line: export TINYGOROOT=$(...) and
# put $TINYGOROOT/bin on PATH. With --missing-packages it installs nothing
# and prints the Debian packages it would install, one a line.
#
#   ./scripts/wasm-toolchains.sh
set -euo pipefail

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="$PATH:/usr/local/go/bin"
fi

tinygo_version=v0.42.0
tools=${MCPX_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpx-tools}
root="$tools/tinygo"

log() { printf 'wasm-toolchains: %s\n' "$*" >&2; }

# Debian packages, installed only when one is missing.
pkgs=(wabt rustc libstd-rust-dev-wasm32 lld-14
	llvm-19-dev libclang-19-dev clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32 binaryen)
missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
if [ "${1:-}" = "--missing-packages" ]; then
	[ "${#missing[@]}" -eq 0 ] || printf '%s\n' "${missing[@]}"
	exit 0
fi
"$(dirname "${BASH_SOURCE[0]}")/debian-packages.sh" "${missing[@]}"

# TinyGo, built once into $root (a writable copy of the module source,
# which is also TINYGOROOT).
if [ ! -x "$root/bin/tinygo" ] || [ "$(cat "$root/.mcpx-version" 2>/dev/null)" != "$tinygo_version" ]; then
	log "building TinyGo $tinygo_version into $root (about two minutes)"
	src=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "github.com/tinygo-org/tinygo@$tinygo_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -n "$src" ] || { log "go mod download of tinygo failed"; exit 1; }
	rm -rf "$root.tmp"
	mkdir -p "$tools"
	cp -r "$src" "$root.tmp"
	chmod -R u+w "$root.tmp"
	(
		cd "$root.tmp"
		# src/net is a git submodule, absent from the module; guests cannot
		# import net, so an empty folder stands in for it.
		mkdir -p src/net
		# tinygo.org/x/espflasher (used only to flash ESP boards) is served
		# only at v0.6.0, whose EraseFlash takes no progress callback.
		go mod edit -replace tinygo.org/x/espflasher=tinygo.org/x/espflasher@v0.6.0
		GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 || true
		sed -i 's/EraseFlash(progressFunc)/EraseFlash()/' main.go
		GOFLAGS=-mod=mod go build -tags=llvm19 -o bin/tinygo .
	)
	echo "$tinygo_version" >"$root.tmp/.mcpx-version"
	rm -rf "$root"
	mv "$root.tmp" "$root"
fi

# Seed TinyGo's library cache with Debian's prebuilt wasm32 libraries.
cache=${XDG_CACHE_HOME:-$HOME/.cache}/tinygo
libc="$cache/wasi-libc-wasm32-unknown-wasi-generic"
crt="$cache/compiler-rt-wasm32-unknown-wasi-generic"
if [ ! -f "$libc/lib.a" ] || [ ! -f "$crt/lib.a" ]; then
	log "seeding $cache with Debian's wasi-libc and compiler-rt"
	mkdir -p "$libc/include" "$crt"
	cp -r /usr/include/wasm32-wasi/. "$libc/include/"
	cp /usr/lib/wasm32-wasi/libc.a "$libc/lib.a"
	cp /usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a "$crt/lib.a"
fi

echo "$root"

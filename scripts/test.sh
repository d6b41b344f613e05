#!/usr/bin/env bash
# Runs every check CI runs, in order: gofmt, go vet, the tests with the race
# detector, and a short fuzz pass over every fuzz target in the module.
# Safe to run again and again; run it from anywhere.
#
# The suite has three tiers:
#
#   go test ./...                 the tests alone, no tool installed: a
#                                 test that needs a missing tool (node,
#                                 TinyGo, Chromium, S3, ...) skips, saying
#                                 how to install it; under CI=true none
#                                 skips, it fails
#   ./scripts/test.sh             everything CI runs: installs the tools
#                                 when missing, then gofmt, go vet, the
#                                 race detector over real peers, browsers
#                                 and S3, the reliability suite and a
#                                 short fuzz pass
#   MCPX_LONG=1 ./scripts/test.sh the same with the long passes: each fuzz
#                                 target ten times longer, the reliability
#                                 suite (its load tests) three times
#
# Environment:
#   MCPX_LONG      1 for the long passes (above); CI runs the short ones.
#   MCPX_FUZZTIME  fuzz budget per target (a go test -fuzztime value: a
#                  count such as 200000x, or a duration such as 5m); by
#                  default 50000x, 2-20 s a target here, and 500000x
#                  with MCPX_LONG=1.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
start=$SECONDS
long=${MCPX_LONG:-0}
case "$long" in
0 | 1) ;;
*) echo "test.sh: MCPX_LONG is 0 or 1, not \"$long\"" >&2; exit 2 ;;
esac
step="setup"
trap 'rc=$?; if [ "$rc" -ne 0 ]; then echo "test.sh: FAILED during: $step (exit $rc)" >&2; fi' EXIT

say() { printf '\n== %s\n' "$*"; }

# Go: on PATH, or where the official tarball installs it.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="$PATH:/usr/local/go/bin"
fi
command -v go >/dev/null 2>&1 || { echo "test.sh: go is not installed (https://go.dev/dl/)" >&2; exit 1; }

# The race detector needs cgo, so a C compiler. Fresh Debian images have
# none: install one when we may.
step="C compiler for -race"
cc=$(go env CC)
if ! command -v "${cc%% *}" >/dev/null 2>&1; then
	say "installing a C compiler (gcc) for the race detector"
	if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else sudo="none"; fi
	if [ "$sudo" = "none" ] || ! command -v apt-get >/dev/null 2>&1; then
		echo "test.sh: go test -race needs a C compiler ($cc); install gcc and run again" >&2
		exit 1
	fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends gcc libc6-dev >/dev/null
fi
export CGO_ENABLED=1

# Real MCP peers for the gateway tests (server-everything, the inspector
# CLI), pinned in tools/npm/package-lock.json: npm ci when node_modules is
# missing or older than the lock file.
step="npm ci (tools/npm)"
command -v npm >/dev/null 2>&1 || { echo "test.sh: node and npm are needed for the gateway's real-peer tests (Debian: apt-get install nodejs npm)" >&2; exit 1; }
stamp=tools/npm/node_modules/.package-lock.json
if [ ! -f "$stamp" ] || [ tools/npm/package-lock.json -nt "$stamp" ]; then
	say "npm ci in tools/npm"
	(cd tools/npm && npm ci --no-audit --no-fund --loglevel=error)
fi

# The official MCP conformance suite (Node 22 and the suite, pinned in
# tools/conformance/package-lock.json) and the go-sdk servers it runs
# against, built once into ~/.cache/mcpx-tools: tests/conformance runs
# the suite against them directly and through mcpx.
step="conformance tools"
say "MCP conformance tools (scripts/conformance-tools.sh)"
MCPX_GOSDK_BIN=$(./scripts/conformance-tools.sh | tail -n 1)
export MCPX_GOSDK_BIN

# WASM guest toolchains (layers/wasm, plugins/, examples/wasm-*): Debian's
# rustc for wasm32, LLVM 19 and binaryen, and TinyGo v0.42.0 built into
# ~/.cache/mcpx-tools/tinygo; each only when missing. The Go tests build the
# guests with them (Go and TinyGo builds of the same sources, the Rust
# example and scaffold), check that the committed presets equal fresh
# builds, and fail rather than skip under CI=true when one is absent.
step="WASM toolchains"
say "WASM guest toolchains (scripts/wasm-toolchains.sh)"
TINYGOROOT=$(./scripts/wasm-toolchains.sh | tail -n 1)
export TINYGOROOT
export PATH="$PATH:$TINYGOROOT/bin"

# A real S3 server for store/s3store and the mcpx tests on S3: versitygw,
# built once into ~/.cache/mcpx-tools/versitygw-<version> (about three
# minutes cold); the tests run it on loopback and fail rather than skip
# under CI=true when it is absent.
step="S3 server"
say "versitygw (scripts/s3-tools.sh)"
MCPX_VERSITYGW=$(./scripts/s3-tools.sh | tail -n 1)
export MCPX_VERSITYGW

# A real load balancer for tests/replicas (two mcpx serve replicas on
# one bucket): Debian's haproxy, installed when missing; the test fails
# rather than skips under CI=true when it is absent.
step="load balancer"
say "haproxy (scripts/haproxy-tools.sh)"
MCPX_HAPROXY=$(./scripts/haproxy-tools.sh | tail -n 1)
export MCPX_HAPROXY

# Headless Chromium for the UI tests (cmd/mcpx/internal/cli TestUIBrowser*, web
# TestUIBrowser*): Debian's chromium, installed when missing; the tests
# drive it with chromedp and fail rather than skip under CI=true when it
# is absent. Screenshots go to $MCPX_TEST_ARTIFACTS, else testdata/out.
step="Chromium"
say "Chromium (scripts/chromium-tools.sh)"
MCPX_CHROMIUM=$(./scripts/chromium-tools.sh | tail -n 1)
export MCPX_CHROMIUM

# PDF tools for package inspect's corpus: poppler's pdftotext and pdfinfo
# (the reference the PDF reader is held to), qpdf and Ghostscript (which
# scripts/pdf-corpus.sh makes the corpus with); Debian's, installed when
# missing. TestPDFCorpusReferences fails rather than skips under CI=true
# when poppler is absent.
step="PDF tools"
say "poppler, qpdf, Ghostscript (scripts/pdf-tools.sh)"
./scripts/pdf-tools.sh >/dev/null

# The PDF reader (PDFium on wazero) is compiled once per machine into the
# WASM compilation cache (~/.cache/mcpx/wasm): 3 s of CPU here, but half a
# minute in a binary built with the race detector, which would land in
# whichever test reads a PDF first. A test binary without it fills the
# cache that the race-built ones then load.
step="PDF reader compilation cache"
say "go test -count=1 -run TestPDFCorpus\$ ./inspect (fills the compilation cache)"
go test -count=1 -run 'TestPDFCorpus$' ./inspect

step="gofmt"
say "gofmt -l"
unformatted=$(find . -name '*.go' \
	-not -path './.git/*' -not -path '*/node_modules/*' -not -path '*/vendor/*' -not -path '*/testdata/*' \
	-print0 | xargs -0 -r gofmt -l)
if [ -n "$unformatted" ]; then
	echo "not gofmt-ed (run gofmt -w on them):" >&2
	echo "$unformatted" >&2
	exit 1
fi

step="go vet"
say "go vet ./..."
go vet ./...

# golangci-lint with .golangci.yml (staticcheck, revive's doc-comment
# rules, errorlint, govet, ineffassign, unused), pinned and built once by
# scripts/lint-tools.sh; any finding fails the run. The Go guests are
# linted once more as the wasip1 builds they are, without their tests,
# which run on the host.
step="golangci-lint"
say "golangci-lint run (scripts/lint-tools.sh)"
golangci_lint=$(./scripts/lint-tools.sh | tail -n 1)
"$golangci_lint" run ./...
GOOS=wasip1 GOARCH=wasm "$golangci_lint" run --tests=false ./sdk/wasm-guest/go/... ./plugins/... ./examples/wasm-go/...

step="go test -race"
say "go test -race -count=1 -timeout 30m ./..."
go test -race -count=1 -timeout 30m ./...

# Tests that the race detector's memory overhead would distort (results of
# 50 and 100 MB, peak memory checked; what image views allocate and hold,
# which its random drops from sync.Pool inflate) carry a !race build tag:
# run them here.
step="go test (large results, no race detector)"
say "go test -count=1 -run TestLargeResults ./cmd/mcpx/internal/cli"
go test -count=1 -run TestLargeResults ./cmd/mcpx/internal/cli
say "go test -count=1 -run TestViewReservesWhatItAllocates ./imageview"
go test -count=1 -run TestViewReservesWhatItAllocates ./imageview
say "go test -count=1 -run TestConcurrentImageViewsStayInTheBudget ./engine"
go test -count=1 -run TestConcurrentImageViewsStayInTheBudget ./engine

# The reliability suite (tests/reliability, build tag "reliability"):
# the gateway killed with SIGKILL mid-run, a full disk (a tmpfs: skipped
# without root), the object store stopped or slowed to a trickle mid-put,
# one of two replicas on a bucket killed mid-upload, 64 sessions of 1-10
# MB blobs through mcpx serve with "shared" and "pool" instances and
# beside hostile WASM plugins, ten 49 MP images at once within the work
# memory budget. About a minute and a half here; bounded at 10 a pass.
# MCPX_LONG=1 runs it three times over.
step="reliability suite"
passes=1
if [ "$long" = 1 ]; then passes=3; fi
say "go test -tags reliability -count=$passes -timeout $(( passes * 10 ))m ./tests/reliability/..."
go test -tags reliability -count="$passes" -timeout "$(( passes * 10 ))m" ./tests/reliability/...

# Fuzz targets: every "func FuzzX(" in a _test.go file of this module (a
# folder with its own go.mod is another module, tested on its own).
step="fuzz discovery"
targets=()
while IFS= read -r file; do
	dir=$(dirname "$file")
	nested=""
	d=$dir
	while [ "$d" != "." ]; do
		if [ -f "$d/go.mod" ]; then nested=$d; break; fi
		d=$(dirname "$d")
	done
	if [ -n "$nested" ]; then
		echo "skipping fuzz targets of $file: module $nested" >&2
		continue
	fi
	while IFS= read -r name; do
		targets+=("$dir $name")
	done < <(grep -oE '^func Fuzz[A-Za-z0-9_]*\(' "$file" | sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(/\1/')
done < <(grep -rlE --include='*_test.go' --exclude-dir=.git --exclude-dir=node_modules --exclude-dir=vendor --exclude-dir=testdata \
	'^func Fuzz[A-Za-z0-9_]*\(' . | sort)

# The budget is a count of executions, not a duration: a duration races
# the fuzzing coordinator's own deadline (Go's fuzzer then fails with
# "context deadline exceeded" and no failing input; it hit CI here while a
# new input was being minimised past the budget). Minimising is bounded by a
# count too, so a new input never stalls a target for the default minute.
if [ "${#targets[@]}" -gt 0 ]; then
	fuzztime=50000x
	if [ "$long" = 1 ]; then fuzztime=500000x; fi
	fuzztime=${MCPX_FUZZTIME:-$fuzztime}
	for t in "${targets[@]}"; do
		dir=${t% *}
		name=${t#* }
		step="fuzz $name in $dir"
		say "go test -run '^\$' -fuzz '^$name\$' -fuzztime $fuzztime -fuzzminimizetime 500x $dir"
		go test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" -fuzzminimizetime 500x "$dir"
	done
fi

step="done"
echo
echo "test.sh: all checks passed: gofmt, go vet, go test -race, the reliability suite ($passes pass(es)), ${#targets[@]} fuzz targets (${fuzztime:-0s} each) in $(( SECONDS - start ))s"

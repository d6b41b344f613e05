#!/usr/bin/env bash
# Runs every check CI runs, in order: gofmt, golangci-lint (go vet's
# analyzers among its linters), the tests with the race detector, and a
# short fuzz pass over every fuzz target in the module.
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
#                                 when missing, then gofmt, the linters, the
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
jobs_dir=""
# On the way out: say which step failed, stop the installs still running
# in the background, and remove their logs.
trap 'rc=$?; if [ "$rc" -ne 0 ]; then echo "test.sh: FAILED during: $step (exit $rc)" >&2; fi
	pids=$(jobs -p); [ -z "$pids" ] || kill $pids 2>/dev/null || true
	[ -z "$jobs_dir" ] || rm -rf "$jobs_dir"' EXIT

# say heads each step with the seconds since the start.
say() { printf '\n== %s  [%ds]\n' "$*" "$(( SECONDS - start ))"; }

# Go: on PATH, or where the official tarball installs it.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="$PATH:/usr/local/go/bin"
fi
command -v go >/dev/null 2>&1 || { echo "test.sh: go is not installed (https://go.dev/dl/)" >&2; exit 1; }

# The tools the tests drive, each installed only when missing. Debian's
# packages come first, in one apt-get for all (each tools script prints
# what it would install with --missing-packages): dpkg takes one installer
# at a time, and each apt-get update fetches the package lists again.
#
#   - a C compiler: the race detector needs cgo, and fresh Debian images
#     have none;
#   - WASM guest toolchains (layers/wasm, plugins/, examples/wasm-*):
#     wabt, Debian's rustc for wasm32, LLVM 19 and binaryen for TinyGo;
#   - haproxy, the load balancer of tests/replicas (two mcpx serve
#     replicas on one bucket);
#   - headless Chromium for the UI tests (cmd/mcpx/internal/cli and web
#     TestUIBrowser*, driven with chromedp; screenshots go to
#     $MCPX_TEST_ARTIFACTS, else testdata/out);
#   - poppler's pdftotext and pdfinfo (the reference package inspect's PDF
#     reader is held to), qpdf and Ghostscript (which
#     scripts/pdf-corpus.sh makes the corpus with).
#
# Under CI=true a test whose tool is absent fails rather than skips.
step="Debian packages"
need=()
cc=$(go env CC)
command -v "${cc%% *}" >/dev/null 2>&1 || need+=(gcc libc6-dev)
for s in wasm-toolchains haproxy-tools chromium-tools pdf-tools; do
	mapfile -t -O "${#need[@]}" need < <("./scripts/$s.sh" --missing-packages)
done
if [ "${#need[@]}" -gt 0 ]; then
	say "Debian packages: ${need[*]} (scripts/debian-packages.sh)"
	./scripts/debian-packages.sh "${need[@]}"
fi
export CGO_ENABLED=1
command -v npm >/dev/null 2>&1 || { echo "test.sh: node and npm are needed for the gateway's real-peer tests (Debian: apt-get install nodejs npm)" >&2; exit 1; }

# Then what is built from the Go module proxy and fetched from the npm
# registry, side by side: a cold install mostly waits on downloads and on
# single-threaded links, which a queue of builds would leave a core idle
# through (on a fresh HOME here: 150 s one after another). Each job logs to
# its own file, shown when it fails; each prints its tool's path on its
# last line.
#
#   - npm: the real MCP peers of the gateway tests (server-everything, the
#     inspector CLI), pinned in tools/npm/package-lock.json;
#   - conformance: the official MCP conformance suite with Node 22
#     (tools/conformance/package-lock.json) and the go-sdk servers it runs
#     against, which tests/conformance runs directly and through mcpx;
#   - tinygo: TinyGo v0.42.0, built into ~/.cache/mcpx-tools/tinygo; the
#     tests build the guests with it (Go and TinyGo builds of the same
#     sources, the Rust example and scaffold) and check that the committed
#     presets equal fresh builds;
#   - s3: versitygw, the real S3 server store/s3store and the mcpx tests
#     on S3 run on loopback;
#   - lint: golangci-lint (scripts/lint-tools.sh).
jobs_dir=$(mktemp -d)
declare -A job_pid=()
background() {
	local name=$1
	shift
	"$@" >"$jobs_dir/$name.out" 2>"$jobs_dir/$name.err" &
	job_pid[$name]=$!
}
# await waits for a background job and exports its last line (the tool's
# path) as the variable named second, or shows the job's log and stops
# the run when it failed. Not in a $(...): only this shell can wait.
await() {
	local name=$1 var=$2
	step="installing $name"
	if kill -0 "${job_pid[$name]}" 2>/dev/null; then
		echo "test.sh: waiting for $name to install" >&2
	fi
	if ! wait "${job_pid[$name]}"; then
		echo "test.sh: installing $name failed:" >&2
		cat "$jobs_dir/$name.out" "$jobs_dir/$name.err" >&2
		exit 1
	fi
	printf -v "$var" '%s' "$(tail -n 1 "$jobs_dir/$name.out")"
	export "${var?}"
}
npm_tools() {
	local stamp=tools/npm/node_modules/.package-lock.json
	if [ ! -f "$stamp" ] || [ tools/npm/package-lock.json -nt "$stamp" ]; then
		(cd tools/npm && npm ci --no-audit --no-fund --loglevel=error)
	fi
	echo "$root/tools/npm/node_modules"
}
step="installing tools"
say "tools, installed side by side when missing: npm peers, conformance suite and go-sdk servers, TinyGo, versitygw, golangci-lint"
background npm npm_tools
background conformance ./scripts/conformance-tools.sh
background tinygo ./scripts/wasm-toolchains.sh
background s3 ./scripts/s3-tools.sh
background lint ./scripts/lint-tools.sh
MCPX_HAPROXY=$(./scripts/haproxy-tools.sh | tail -n 1)
MCPX_CHROMIUM=$(./scripts/chromium-tools.sh | tail -n 1)
export MCPX_HAPROXY MCPX_CHROMIUM
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

# golangci-lint with .golangci.yml (staticcheck, revive's doc-comment
# rules, errorlint, govet, ineffassign, unused), pinned and built once by
# scripts/lint-tools.sh; any finding fails the run. Its govet runs go
# vet's default analyzers (all but loopclosure, which finds nothing since
# Go 1.22 gave each iteration its own variable), over the build-tagged
# files too, so no separate go vet compiles the module once more. The Go guests are linted once more as
# the wasip1 builds they are, without their tests, which run on the host.
step="golangci-lint"
say "golangci-lint run, go vet's analyzers included (scripts/lint-tools.sh)"
await lint golangci_lint
"$golangci_lint" run ./...
GOOS=wasip1 GOARCH=wasm "$golangci_lint" run --tests=false ./sdk/wasm-guest/go/... ./plugins/... ./examples/wasm-go/...

await npm npm_peers
await conformance MCPX_GOSDK_BIN
await tinygo TINYGOROOT
await s3 MCPX_VERSITYGW
export PATH="$PATH:$TINYGOROOT/bin"

# The slowest packages first (1-4 minutes each under the race detector,
# mostly waiting on real peers): go test starts builds and test binaries
# in the order the packages are named, and one that starts last runs on
# alone while the other core idles. A package named twice is tested
# once. One more package at a time than there are cores: in the second
# half of this step, on two cores, a third of the CPU sat idle while the
# two test binaries waited on their peers (the suite's tests hold under
# load).
step="go test -race"
slowest=(./tests/compat ./cmd/mcpx/internal/cli ./gateway ./layers/wasm ./examples/newcomer ./plugins ./store/fsstore)
procs=$(( $(nproc) + 1 ))
say "go test -race -count=1 -p $procs -timeout 30m ${slowest[*]} ./..."
go test -race -count=1 -p "$procs" -timeout 30m "${slowest[@]}" ./...

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
echo "test.sh: all checks passed: gofmt, golangci-lint, go test -race, the reliability suite ($passes pass(es)), ${#targets[@]} fuzz targets (${fuzztime:-0s} each) in $(( SECONDS - start ))s"

#!/usr/bin/env bash
# Reproduces the figures in BENCHMARKS.md on this machine:
#   1. the engine's Go benchmarks (go test -bench, 5 runs each, for benchstat);
#   2. whole-process `mcpx transform` against the minimal floor program on a
#      10 MiB Tableau PDF result (hyperfine);
#   3. peak memory (max RSS) of `mcpx transform` on 10, 50 and 100 MiB results;
#   4. the gateway through the built binary: `mcpx wrap` in front of
#      the go-sdk example server over stdio, one call at a time, against the
#      server directly and a bare byte relay; `mcpx serve --listen` in front of
#      its HTTP mode, 16 concurrent clients sending stateless 2026-07-28
#      requests, against 16 sessions on the server directly. Runs interleave
#      and medians are reported (bench/gatewaybench).
# Installs hyperfine and GNU time from Debian when missing and run as root.
#
#   ./scripts/bench.sh            # everything
#   BENCH=engine ./scripts/bench.sh   # only step 1
#   BENCH=gateway ./scripts/bench.sh  # only step 4 (BENCH_CALLS calls per
#     run, BENCH_RUNS runs; BENCH_BASELINE: another mcpx binary beside it)
#   BENCH=store ./scripts/bench.sh    # only the store: its Go
#     benchmarks at 0/10k/100k artifacts, puts from 16 goroutines and 4
#     processes, and `mcpx transform` of a small result and `mcpx artifacts
#     ls` on an empty vs a 100,000-artifact store (time, time to the first
#     line and max RSS), one
#     put on each, the CLI against bench/smallest (and MCPX_OLD, a
#     binary of an earlier commit, side by side; hyperfine, then
#     interleaved without and with the Tableau preset), the binary's
#     package initialisation against bench/smallest's, per package
#     (GODEBUG=inittrace=1, bench/inittrace), and the 10 MiB PDF in
#     an existing store against bench/floor (hyperfine, then runs
#     interleaved round by round: bench/interleave; MCPX_OLD too)
#   BENCH=text ./scripts/bench.sh     # only the text path: a
#     600,000-character accessibility snapshot (as @playwright/mcp's
#     browser_snapshot answers; an escape every dozen bytes) and 600,000
#     characters of plain text: the Go benchmarks, `mcpx transform --stats`
#     (p50 of 15), the whole process against `cat` of the same file (the
#     pass-through floor), and strace's count of write calls. Set
#     BENCH_BASELINE to another mcpx binary to measure it side by side.
#   BENCH=s3 ./scripts/bench.sh       # only the S3 store: put and
#     get of 10 and 100 MiB through store/s3store against minio-go's own
#     PutObject/GetObject of the same bytes (the floor; PutObject also with
#     the payload unsigned, as over HTTPS), B/op, and the cost of a
#     presigned URL, on versitygw over loopback with keep-alive
#     (scripts/s3-tools.sh)
#   BENCH=replicas ./scripts/bench.sh # only replicas: two `mcpx
#     serve` replicas on one versitygw bucket behind haproxy (round robin)
#     against one replica behind the same haproxy, each replica in front
#     of its own go-sdk example server over stdio; 16 clients sending
#     stateless 2026-07-28 tools/call requests, calls/s and p99, runs
#     interleaved (bench/gatewaybench http -direct-stateless)
#   BENCH=textproxy ./scripts/bench.sh  # a 600,000-character snapshot from
#     a stdio server (gatewaybench snapshot-server -vary: new bytes each
#     call), one call at a time over streamable HTTP, p50 of 15
#     interleaved calls: direct over stdio, through `mcpx serve`, and
#     through TBXark/mcp-proxy when MCP_PROXY names its binary (build it
#     from a clone: git clone https://github.com/TBXark/mcp-proxy && cd
#     mcp-proxy && go build -o mcp-proxy .); BENCH_BASELINE adds another
#     mcpx binary
#   BENCH=httpproxy ./scripts/bench.sh  # is mcpx ahead of a pass-through
#     proxy over HTTP, and is 2026-07-28 as fast as 2025-11-25? the go-sdk
#     example server over stdio behind `mcpx serve --listen` and behind
#     TBXark/mcp-proxy (built from source at a pinned commit and cached in
#     ~/.cache/mcpx-tools; MCP_PROXY_SRC may name a local clone where
#     github.com cannot be reached, MCP_PROXY a built binary) and behind
#     the floor of any HTTP gateway (gatewaybench http-relay), greet
#     called by 16 clients and by 1: mcpx with 2025-11-25 sessions, mcpx
#     with stateless 2026-07-28 requests, the proxy and the floor, runs interleaved
#     (bench/gatewaybench http -target), medians; BENCH_HTTP_CALLS calls
#     per client per run, BENCH_RUNS runs; then the server's own cost of
#     each revision, directly over stdio (gatewaybench stdio
#     -direct-stateless)
#   BENCH=posttransform ./scripts/bench.sh  # POST /transform of a
#     10 MiB PDF result to `mcpx serve --listen` against `mcpx transform`
#     of the same input, new bytes each round (8 bytes of the base64
#     changed), p50 of 10 rounds
#   BENCH=pdf ./scripts/bench.sh   # the PDF reader (PDFium on wazero): the
#     binary's size and package inits (GODEBUG=inittrace=1 mcpx version,
#     15 runs), a small result's `mcpx transform` (15 runs), the first PDF
#     of a process with an empty and with a filled compilation cache (a
#     fresh XDG_CACHE_HOME; 5 runs each), the 100-page corpus file whole
#     (time and max RSS, 5 runs), then inspect's Go benchmarks (per page,
#     a page as artifacts query reads it, a page rendered). Medians; set
#     BENCH_BASELINE to another mcpx binary to measure it side by side.
#   BENCH=steady ./scripts/bench.sh   # the two whole-process targets,
#     each checked BENCH_STEADY_RUNS (5) times over, with a count of the
#     checks that held: the 10 MiB PDF in an existing store against
#     bench/floor (each check: bench/interleave -n 30 -warmup 3, median
#     ratio at most 1.25x) and the stdio hop of `mcpx wrap` against the
#     bare relay (each check: gatewaybench stdio -n 1000 -runs 5,
#     median p50 within 25 µs and calls/s at least 0.9x). Meant for a
#     quiet machine; it prints `uptime` before and after.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
out=${BENCH_OUT:-$(mktemp -d)}
what=${BENCH:-all}
mkdir -p "$out"

need() {
	command -v "$1" >/dev/null 2>&1 && return
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get install -y -qq "$2" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }
	else
		echo "bench.sh: please install $2" >&2; exit 1
	fi
}

if [ "$what" = all ] || [ "$what" = engine ]; then
	echo "== go test -bench (engine chain, floor, store)"
	go test ./layers -run '^$' -bench 'Chain|Floor|Guardrail|Small' -benchtime 20x -count 5 | tee "$out/engine.txt"
	go test ./store/fsstore ./store/memstore -run '^$' -bench Put -benchtime 20x -count 3 | tee "$out/store.txt"
fi

if [ "$what" = all ] || [ "$what" = process ]; then
	need hyperfine hyperfine
	need /usr/bin/time time
	CGO_ENABLED=0 go build -o "$out/mcpx" ./cmd/mcpx # static, as README.md installs it
	CGO_ENABLED=0 go build -o "$out/floor" ./bench/floor # static, as mcpx is
	go build -o "$out/benchdata" ./bench/benchdata
	for n in 10 50 100; do "$out/benchdata" "$n" "$out/r$n.json"; done
	mkdir -p "$out/floor-dir"
	echo "== whole process, 10 MiB result: mcpx transform vs floor"
	hyperfine -w 2 -r 15 \
		--prepare "rm -rf $out/home $out/floor-dir; mkdir -p $out/floor-dir" \
		"env MCPX_HOME=$out/home $out/mcpx transform --server tableau --tool download_workbook $out/r10.json" \
		"$out/floor $out/r10.json $out/floor-dir" | tee "$out/process.txt"
	echo "== peak memory (max RSS) of mcpx transform"
	for n in 10 50 100; do
		rm -rf "$out/home"
		size=$(stat -c %s "$out/r$n.json")
		rss=$( { MCPX_HOME=$out/home /usr/bin/time -f '%M' "$out/mcpx" transform --server tableau "$out/r$n.json" >/dev/null; } 2>&1 | tail -1)
		printf '%3s MiB result: %d bytes in, max RSS %d KiB = %.2fx the input\n' "$n" "$size" "$rss" "$(echo "$rss*1024/$size" | bc -l)"
	done | tee "$out/memory.txt"
fi
if [ "$what" = all ] || [ "$what" = gateway ]; then
	gosdk=$(./scripts/conformance-tools.sh | tail -n 1)
	ev=$gosdk/everything
	CGO_ENABLED=0 go build -o "$out/mcpx" ./cmd/mcpx # static, as README.md installs it
	go build -o "$out/gatewaybench" ./bench/gatewaybench
	export MCPX_HOME=$out/gateway-home
	echo "== stdio, one call at a time: direct vs bare relay vs mcpx wrap"
	base=()
	if [ -n "${BENCH_BASELINE:-}" ]; then base=(-base "$BENCH_BASELINE wrap -- $ev"); fi
	"$out/gatewaybench" stdio -n "${BENCH_CALLS:-2000}" -runs "${BENCH_RUNS:-5}" -direct "$ev" \
		-relay "$out/gatewaybench relay $ev" "${base[@]}" -via "$out/mcpx wrap -- $ev" | tee "$out/gateway-stdio.txt"
	echo "== streamable HTTP, 16 clients: direct (sessions) vs mcpx serve (stateless 2026-07-28)"
	up=$((20000 + RANDOM % 10000)); gw=$((up + 1))
	"$ev" -http "127.0.0.1:$up" 2>/dev/null &
	ev_pid=$!
	printf '{"mcpServers":{"everything":{"url":"http://127.0.0.1:%d/mcp"}}}' "$up" >"$out/gateway-http.json"
	"$out/mcpx" serve --config "$out/gateway-http.json" --listen "127.0.0.1:$gw" 2>"$out/gateway-serve.log" &
	gw_pid=$!
	trap 'kill $ev_pid $gw_pid 2>/dev/null || true' EXIT
	for port in $up $gw; do
		for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
	done
	"$out/gatewaybench" http -clients 16 -n "${BENCH_HTTP_CALLS:-300}" -runs 5 \
		-direct "http://127.0.0.1:$up/mcp" -via "http://127.0.0.1:$gw/mcp" | tee "$out/gateway-http.txt"
	kill $ev_pid $gw_pid 2>/dev/null || true
	trap - EXIT
fi
if [ "$what" = store ]; then
	need hyperfine hyperfine
	need /usr/bin/time time
	echo "== go test -bench (store index at 0/10k/100k, parallel puts)"
	go test ./store/fsstore -run '^$' -bench 'Index|PutParallel|PutProcesses' -benchtime 200x -count 3 | tee "$out/store-index.txt"
	CGO_ENABLED=0 go build -o "$out/mcpx" ./cmd/mcpx
	rm -rf "$out/empty" "$out/full"
	mkdir -p "$out/empty"
	"$out/mcpx" artifacts ls --store "$out/empty" >/dev/null
	FSSTORE_FILL_DIR="$out/full" FSSTORE_FILL_N=100000 go test ./store/fsstore -run '^TestFillStore$' -count 1 >/dev/null
	printf '{"content":[{"type":"text","text":"a small result of fifty bytes, nothing to store"}]}' >"$out/small.json"
	echo "== mcpx transform of a small result: empty vs 100,000-artifact store"
	hyperfine -N -w 5 -r 40 \
		"$out/mcpx transform --store $out/empty --server s $out/small.json" \
		"$out/mcpx transform --store $out/full --server s $out/small.json" | tee "$out/store-transform.txt"
	echo "== mcpx artifacts ls (first page): empty vs 100,000-artifact store"
	hyperfine -N -w 3 -r 20 \
		"$out/mcpx artifacts ls --store $out/empty" \
		"$out/mcpx artifacts ls --store $out/full" | tee "$out/store-ls.txt"
	echo "== mcpx artifacts ls, time to the first line (table and --json): 100,000-artifact vs empty store (bench/interleave -first-line; medians; target 1.3x)"
	# Two empty stores: a folder that has never held an artifact (no
	# index: ls opens no database) and one whose only artifact was
	# removed (an index with no rows, as any store that has been used).
	rm -rf "$out/emptied"; mkdir -p "$out/emptied"
	printf '{"content":[{"type":"text","text":"%s"}]}' "$(head -c 22500 /dev/urandom | base64 -w0)" >"$out/emptied.json"
	"$out/mcpx" transform --store "$out/emptied" --server s "$out/emptied.json" >/dev/null
	"$out/mcpx" artifacts ls --json --store "$out/emptied" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | xargs "$out/mcpx" artifacts rm --store "$out/emptied" >/dev/null
	go build -o "$out/interleave" ./bench/interleave
	"$out/interleave" -n 41 -warmup 5 -first-line \
		"$out/mcpx artifacts ls --store $out/full" "$out/mcpx artifacts ls --json --store $out/full" \
		"$out/mcpx artifacts ls --store $out/emptied" \
		"$out/mcpx artifacts ls --store $out/empty" | tee "$out/store-ls-first-line.txt"
	echo "== mcpx transform of a result that stores one new 30 kB text artifact: empty vs 100,000-artifact store"
	# each run stores new bytes (the prepare step writes them); the stores
	# persist across runs, as a user's does (the first open of a copied
	# store settles it once: not what is measured)
	cp -a "$out/empty" "$out/empty0"; cp -a "$out/full" "$out/full0"
	"$out/mcpx" transform --store "$out/empty0" --server warm "$out/small.json" >/dev/null
	newresult="sh -c 'printf \"{\\\"content\\\":[{\\\"type\\\":\\\"text\\\",\\\"text\\\":\\\"%s\\\"}]}\" \$(head -c 22500 /dev/urandom | base64 -w0) > $out/onestored.json'"
	eval "$newresult"
	"$out/mcpx" transform --store "$out/empty0" --server warm "$out/onestored.json" >/dev/null
	"$out/mcpx" transform --store "$out/full0" --server warm "$out/onestored.json" >/dev/null
	hyperfine -N -w 3 -r 30 --prepare "$newresult" \
		"$out/mcpx transform --store $out/empty0 --server s $out/onestored.json" \
		"$out/mcpx transform --store $out/full0 --server s $out/onestored.json" | tee "$out/store-transform-put.txt"
	echo "== the CLI's own cost: mcpx transform vs the smallest engine program (bench/smallest), small result"
	CGO_ENABLED=0 go build -o "$out/smallest" ./bench/smallest # static, as mcpx is
	runs=("$out/mcpx transform --store $out/empty --server s $out/small.json" "$out/smallest $out/empty $out/small.json s")
	# MCPX_OLD: a binary built from an earlier commit, for start-up side by side
	if [ -n "${MCPX_OLD:-}" ]; then runs+=("$MCPX_OLD transform --store $out/empty-old --server s $out/small.json"); mkdir -p "$out/empty-old"; fi
	hyperfine -N -w 5 -r 40 "${runs[@]}" | tee "$out/store-cli-cost.txt"
	echo "== the same, interleaved, without and with the Tableau preset (bench/interleave; medians; target 1.25x)"
	go build -o "$out/interleave" ./bench/interleave
	for server in s tableau; do
		runs=("$out/mcpx transform --store $out/empty --server $server $out/small.json")
		[ -n "${MCPX_OLD:-}" ] && runs+=("$MCPX_OLD transform --store $out/empty-old --server $server $out/small.json")
		"$out/interleave" -n 41 -warmup 5 "${runs[@]}" "$out/smallest $out/empty $out/small.json $server"
	done | tee "$out/store-cli-cost-interleaved.txt"
	echo "== package initialisation: sums of GODEBUG=inittrace=1's clock column, mcpx version against bench/smallest, 41 rounds in turn (bench/inittrace; target 1.5 ms)"
	go build -o "$out/inittrace" ./bench/inittrace
	inits=("$out/mcpx version" "$out/smallest")
	[ -n "${MCPX_OLD:-}" ] && inits+=("$MCPX_OLD version")
	"$out/inittrace" -n 41 "${inits[@]}" | tee "$out/store-inittrace.txt"
	echo "== 10 MiB base64 PDF in an existing store: mcpx transform vs the floor program (bench/floor)"
	CGO_ENABLED=0 go build -o "$out/floor" ./bench/floor # static, as mcpx is
	go build -o "$out/benchdata" ./bench/benchdata
	"$out/benchdata" 10 "$out/r10.json"
	hyperfine -N -w 3 -r 20 \
		--prepare "sh -c 'rm -rf $out/pdf-store $out/floor-dir; cp -a $out/empty0 $out/pdf-store; mkdir -p $out/floor-dir'" \
		"$out/mcpx transform --store $out/pdf-store --server tableau --tool download_workbook $out/r10.json" \
		"$out/floor $out/r10.json $out/floor-dir" | tee "$out/store-pdf.txt"
	echo "== the same, interleaved (bench/interleave: mcpx, then the floor, round after round; medians)"
	pdfruns=("$out/mcpx transform --store $out/pdf-store --server tableau --tool download_workbook $out/r10.json")
	# MCPX_OLD: a binary built from an earlier commit, side by side
	[ -n "${MCPX_OLD:-}" ] && pdfruns+=("$MCPX_OLD transform --store $out/pdf-store --server tableau --tool download_workbook $out/r10.json")
	"$out/interleave" -n 30 -warmup 3 \
		-prepare "rm -rf $out/pdf-store $out/floor-dir; cp -a $out/empty0 $out/pdf-store; mkdir -p $out/floor-dir" \
		"${pdfruns[@]}" "$out/floor $out/r10.json $out/floor-dir" | tee "$out/store-pdf-interleaved.txt"
	echo "== max RSS (KiB)"
	for d in empty full; do
		t=$( { /usr/bin/time -f '%M' "$out/mcpx" transform --store "$out/$d" --server s "$out/small.json" >/dev/null; } 2>&1 | tail -1)
		l=$( { /usr/bin/time -f '%M' "$out/mcpx" artifacts ls --store "$out/$d" >/dev/null; } 2>&1 | tail -1)
		printf '%-5s store: transform %s KiB, artifacts ls %s KiB\n' "$d" "$t" "$l"
	done | tee "$out/store-rss.txt"
fi
if [ "$what" = text ]; then
	need hyperfine hyperfine
	echo "== go test -bench (text path: jsonstr reader, engine put, default chain)"
	go test ./internal/jsonstr -run '^$' -bench Reader -count 5 | tee "$out/text-reader.txt"
	go test ./engine -run '^$' -bench ArtifactText -benchtime 20x -count 5 | tee "$out/text-engine.txt"
	go test ./layers -run '^$' -bench ChainText600K -benchtime 20x -count 5 | tee "$out/text-chain.txt"
	CGO_ENABLED=0 go build -o "$out/mcpx" ./cmd/mcpx
	go build -o "$out/benchdata" ./bench/benchdata
	"$out/benchdata" snapshot 600000 "$out/snapshot.json"
	"$out/benchdata" text 600000 "$out/plain.json"
	bins=("$out/mcpx")
	[ -n "${BENCH_BASELINE:-}" ] && bins+=("$BENCH_BASELINE")
	echo "== mcpx transform --stats: the engine's own time, p50 of 15 (fresh store each run)"
	for bin in "${bins[@]}"; do
		for f in snapshot plain; do
			for _ in $(seq 15); do
				rm -rf "$out/text-home"
				MCPX_HOME=$out/text-home "$bin" transform --stats "$out/$f.json" 2>&1 >/dev/null | awk '{print $(NF-1)}'
			done | sort -n | awk -v b="$bin" -v f="$f" '{a[NR]=$1} END{printf "%s %-8s p50 %s ms (min %s, max %s)\n", b, f, a[int((NR+1)/2)], a[1], a[NR]}'
		done
	done | tee "$out/text-stats.txt"
	echo "== whole process: mcpx transform vs cat (pass-through floor)"
	cmds=()
	for bin in "${bins[@]}"; do
		for f in snapshot plain; do cmds+=("env MCPX_HOME=$out/text-home $bin transform $out/$f.json"); done
	done
	hyperfine -N -w 3 -r 20 --prepare "rm -rf $out/text-home" "${cmds[@]}" \
		"cat $out/snapshot.json" | tee "$out/text-process.txt"
	if command -v strace >/dev/null 2>&1; then
		echo "== system calls of one mcpx transform (strace -c -f): write calls"
		for bin in "${bins[@]}"; do
			for f in snapshot plain; do
				rm -rf "$out/text-home"
				MCPX_HOME=$out/text-home strace -c -f -o "$out/strace.txt" "$bin" transform "$out/$f.json" >/dev/null
				printf '%s %-8s write calls: %s, all calls: %s\n' "$bin" "$f" \
					"$(awk '$NF == "write" {print $4}' "$out/strace.txt")" "$(awk '$NF == "total" {print $4}' "$out/strace.txt")"
			done
		done | tee "$out/text-strace.txt"
	fi
fi
if [ "$what" = s3 ]; then
	echo "== S3 store against minio-go (versitygw on loopback)"
	MCPX_VERSITYGW=$(./scripts/s3-tools.sh | tail -n 1)
	export MCPX_VERSITYGW
	go test ./store/s3store -run '^$' -bench . -benchtime 5x -count 5 | tee "$out/s3.txt"
fi
if [ "$what" = replicas ]; then
	echo "== two replicas behind haproxy vs one (S3 store on versitygw, 16 stateless clients)"
	MCPX_VERSITYGW=$(./scripts/s3-tools.sh | tail -n 1)
	haproxy=$(./scripts/haproxy-tools.sh | tail -n 1)
	ev=$(./scripts/conformance-tools.sh | tail -n 1)/everything
	CGO_ENABLED=0 go build -o "$out/mcpx" ./cmd/mcpx
	go build -o "$out/gatewaybench" ./bench/gatewaybench
	base=$((20000 + RANDOM % 10000))
	s3=$base r1=$((base + 1)) r2=$((base + 2)) one=$((base + 3)) two=$((base + 4))
	rm -rf "$out/s3data"; mkdir -p "$out/s3data/mcpx-bench"
	ROOT_ACCESS_KEY=bench-access ROOT_SECRET_KEY=bench-secret-key "$MCPX_VERSITYGW" --port "127.0.0.1:$s3" --keep-alive posix "$out/s3data" >"$out/versitygw.log" 2>&1 &
	pids=($!)
	trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
	printf '{"mcpServers":{"everything":{"command":"%s"}},"store":{"s3":{"endpoint":"http://127.0.0.1:%d","bucket":"mcpx-bench","path_style":true,"access_key":"bench-access","secret_key":"bench-secret-key"}},"serve":{"url_secret":"bench-url-secret-0123456789abcdef"}}' \
		"$ev" "$s3" >"$out/replica.json"
	cat >"$out/haproxy.cfg" <<-HAPROXY
	defaults
	    mode http
	    timeout connect 5s
	    timeout client 1h
	    timeout server 1h
	frontend one
	    bind 127.0.0.1:$one
	    default_backend one
	frontend two
	    bind 127.0.0.1:$two
	    default_backend two
	backend one
	    server r1 127.0.0.1:$r1
	backend two
	    balance roundrobin
	    server r1 127.0.0.1:$r1
	    server r2 127.0.0.1:$r2
	HAPROXY
	for port in $s3; do
		for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
	done
	for r in $r1 $r2; do
		MCPX_HOME=$out/replica-$r "$out/mcpx" serve --config "$out/replica.json" --listen "127.0.0.1:$r" 2>"$out/replica-$r.log" &
		pids+=($!)
	done
	"$haproxy" -db -f "$out/haproxy.cfg" >"$out/haproxy.log" 2>&1 &
	pids+=($!)
	for port in $r1 $r2 $one $two; do
		for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
	done
	"$out/gatewaybench" http -direct-stateless -names one,two -clients 16 -n "${BENCH_HTTP_CALLS:-300}" -runs 5 \
		-direct "http://127.0.0.1:$one/mcp" -via "http://127.0.0.1:$two/mcp" | tee "$out/replicas.txt"
	kill "${pids[@]}" 2>/dev/null || true
	trap - EXIT
fi
if [ "$what" = textproxy ]; then
	CGO_ENABLED=0 go build -o "$out/mcpx" ./cmd/mcpx
	go build -o "$out/gatewaybench" ./bench/gatewaybench
	go build -o "$out/benchdata" ./bench/benchdata
	"$out/benchdata" snapshot 600000 "$out/snapshot.json"
	server="$out/gatewaybench snapshot-server -vary $out/snapshot.json"
	printf '{"mcpServers":{"snap":{"command":"%s","args":["snapshot-server","-vary","%s"]}}}' "$out/gatewaybench" "$out/snapshot.json" >"$out/textproxy-mcpx.json"
	base=$((20000 + RANDOM % 10000))
	pids=()
	trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
	targets=()
	bins=("$out/mcpx")
	[ -n "${BENCH_BASELINE:-}" ] && bins+=("$BENCH_BASELINE")
	for i in "${!bins[@]}"; do
		port=$((base + i))
		rm -rf "$out/textproxy-home$i"
		MCPX_HOME=$out/textproxy-home$i "${bins[$i]}" serve --config "$out/textproxy-mcpx.json" --listen "127.0.0.1:$port" 2>"$out/textproxy-serve$i.log" &
		pids+=($!)
		targets+=(-http "mcpx$i=http://127.0.0.1:$port/mcp")
	done
	if [ -n "${MCP_PROXY:-}" ]; then
		port=$((base + 9))
		printf '{"mcpProxy":{"baseURL":"http://127.0.0.1:%d","addr":"127.0.0.1:%d","name":"p","version":"1","type":"streamable-http","options":{"logEnabled":false}},"mcpServers":{"snap":{"command":"%s","args":["snapshot-server","-vary","%s"]}}}' \
			"$port" "$port" "$out/gatewaybench" "$out/snapshot.json" >"$out/textproxy-mcp-proxy.json"
		"$MCP_PROXY" -config "$out/textproxy-mcp-proxy.json" 2>"$out/textproxy-mcp-proxy.log" &
		pids+=($!)
		targets=(-http "mcp-proxy=http://127.0.0.1:$port/snap/mcp" "${targets[@]}")
	fi
	for t in "${targets[@]}"; do
		[[ $t == *=http* ]] || continue
		port=${t##*127.0.0.1:}; port=${port%%/*}
		for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
	done
	echo "== 600,000-character snapshot, one call at a time: direct (stdio) vs HTTP proxies"
	"$out/gatewaybench" text -runs 15 -stdio "$server" "${targets[@]}" | tee "$out/textproxy.txt"
	kill "${pids[@]}" 2>/dev/null || true
	trap - EXIT
fi
# mcpProxyCommit is the TBXark/mcp-proxy commit BENCH=httpproxy builds
# (v0.43.2 and three commits: mcp-go v0.44.0); its module versions are
# not on the Go module proxy, so it is built from a clone.
mcpProxyCommit=4f78891f47eb18578039ec8d45f827e998631f12
# mcpProxy prints the path of TBXark/mcp-proxy's binary, building it into
# the tools cache first when it is not there.
mcpProxy() {
	if [ -n "${MCP_PROXY:-}" ]; then echo "$MCP_PROXY"; return; fi
	local dir=${XDG_CACHE_HOME:-$HOME/.cache}/mcpx-tools/mcp-proxy-${mcpProxyCommit:0:12}
	if [ ! -x "$dir/mcp-proxy" ]; then
		local src
		src=$(mktemp -d)
		git clone -q "${MCP_PROXY_SRC:-https://github.com/TBXark/mcp-proxy}" "$src" >&2
		git -C "$src" checkout -q "$mcpProxyCommit" >&2
		mkdir -p "$dir"
		(cd "$src" && go build -o "$dir/mcp-proxy" .) >&2
		rm -rf "$src"
	fi
	echo "$dir/mcp-proxy"
}
if [ "$what" = httpproxy ]; then
	proxy=$(mcpProxy)
	ev=$(./scripts/conformance-tools.sh | tail -n 1)/everything
	CGO_ENABLED=0 go build -o "$out/mcpx" ./cmd/mcpx
	go build -o "$out/gatewaybench" ./bench/gatewaybench
	gw=$((20000 + RANDOM % 10000)); px=$((gw + 1))
	# the server logs every message to stderr, which mcp-proxy does not
	# read (the server blocks once the pipe is full): both get it discarded
	up=(sh -c "exec $ev 2>/dev/null")
	printf '{"mcpServers":{"everything":{"command":"%s","args":["%s","%s"]}}}' "${up[@]}" >"$out/httpproxy-mcpx.json"
	MCPX_HOME=$out/httpproxy-home "$out/mcpx" serve --config "$out/httpproxy-mcpx.json" --listen "127.0.0.1:$gw" 2>"$out/httpproxy-serve.log" &
	pids=($!)
	printf '{"mcpProxy":{"baseURL":"http://127.0.0.1:%d","addr":"127.0.0.1:%d","name":"p","version":"1","type":"streamable-http","options":{"logEnabled":false}},"mcpServers":{"everything":{"command":"%s","args":["%s","%s"]}}}' \
		"$px" "$px" "${up[@]}" >"$out/httpproxy-mcp-proxy.json"
	"$proxy" -config "$out/httpproxy-mcp-proxy.json" 2>"$out/httpproxy-mcp-proxy.log" &
	pids+=($!)
	# the floor: the least an HTTP gateway over a stdio server does
	rl=$((gw + 2))
	"$out/gatewaybench" http-relay -listen "127.0.0.1:$rl" "${up[@]}" >/dev/null &
	pids+=($!)
	trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
	for port in $gw $px $rl; do
		for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
	done
	uptime | tee "$out/httpproxy.txt"
	for clients in 16 1; do
		echo "== streamable HTTP, $clients client(s), the go-sdk example server over stdio: mcpx 2025-11-25, mcpx 2026-07-28, TBXark/mcp-proxy, the bare HTTP relay"
		"$out/gatewaybench" http -clients "$clients" -n "${BENCH_HTTP_CALLS:-300}" -runs "${BENCH_RUNS:-5}" \
			-target "mcp-proxy=http://127.0.0.1:$px/everything/mcp" \
			-target "mcpx-2025=http://127.0.0.1:$gw/mcp" \
			-target "mcpx-2026=stateless+http://127.0.0.1:$gw/mcp" \
			-target "http-relay=http://127.0.0.1:$rl/mcp"
	done | tee -a "$out/httpproxy.txt"
	echo "== the server's own cost of each revision: directly over stdio, one call at a time, initialized vs never initialized"
	"$out/gatewaybench" stdio -n 1000 -runs "${BENCH_RUNS:-5}" -direct "$ev" -direct-stateless | tee -a "$out/httpproxy.txt"
	kill "${pids[@]}" 2>/dev/null || true
	trap - EXIT
fi
if [ "$what" = posttransform ]; then
	need curl curl
	echo "== POST /transform vs mcpx transform, 10 MiB PDF result"
	CGO_ENABLED=0 go build -o "$out/mcpx" ./cmd/mcpx
	go build -o "$out/benchdata" ./bench/benchdata
	ev=$(./scripts/conformance-tools.sh | tail -n 1)/everything
	printf '{"mcpServers":{"everything":{"command":"%s"}}}' "$ev" >"$out/post.json"
	port=$((30000 + RANDOM % 5000))
	"$out/mcpx" serve --config "$out/post.json" --listen "127.0.0.1:$port" --store "$out/post-store" 2>"$out/post-serve.log" &
	post_pid=$!
	trap 'kill $post_pid 2>/dev/null || true' EXIT
	for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
	for i in $(seq 12); do
		"$out/benchdata" 10 "$out/post-in.json"
		python3 -c "import random,string,sys;p=sys.argv[1];b=bytearray(open(p,'rb').read());i=len(b)//2;b[i:i+8]=''.join(random.choice(string.ascii_letters) for _ in range(8)).encode();open(p,'wb').write(b)" "$out/post-in.json"
		s=$(date +%s%N)
		curl -s -o /dev/null -X POST --data-binary @"$out/post-in.json" "http://127.0.0.1:$port/transform?server=tableau&tool=download_workbook"
		e=$(date +%s%N)
		rm -rf "$out/post-cli"; mkdir -p "$out/post-cli"
		s2=$(date +%s%N)
		"$out/mcpx" transform --store "$out/post-cli" --server tableau --tool download_workbook "$out/post-in.json" >/dev/null
		e2=$(date +%s%N)
		echo "$(( (e - s) / 1000 )) $(( (e2 - s2) / 1000 ))"
	done | tail -n 10 >"$out/post.txt"
	p50() { sort -n | sed -n 5p; }
	post=$(cut -d' ' -f1 "$out/post.txt" | p50)
	cli=$(cut -d' ' -f2 "$out/post.txt" | p50)
	echo "POST /transform p50 $((post / 1000)) ms, mcpx transform p50 $((cli / 1000)) ms, ratio $(echo "scale=2; $post / $cli" | bc)" | tee "$out/posttransform.txt"
	kill $post_pid 2>/dev/null || true
	trap - EXIT
fi
if [ "$what" = pdf ]; then
	command -v /usr/bin/time >/dev/null || { echo "bench: GNU time is needed (apt-get install time)" >&2; exit 1; }
	CGO_ENABLED=0 go build -o "$out/mcpx" ./cmd/mcpx
	bins=("$out/mcpx")
	[ -n "${BENCH_BASELINE:-}" ] && bins+=("$BENCH_BASELINE")
	corpus=inspect/testdata/pdf
	pdfresult() { # FILE OUT: a tool result holding FILE as an embedded PDF
		printf '{"content":[{"type":"resource","resource":{"uri":"file:///%s","mimeType":"application/pdf","blob":"%s"}}]}' \
			"$(basename "$1")" "$(base64 -w0 "$1")" >"$2"
	}
	pdfresult "$corpus/chromium.pdf" "$out/pdf-chromium.json"
	pdfresult "$corpus/hundred.pdf" "$out/pdf-hundred.json"
	printf '{"content":[{"type":"text","text":"{\\"workbooks\\":[{\\"id\\":\\"wb-1\\",\\"name\\":\\"Sales\\"}]}"}]}' >"$out/pdf-small.json"
	printf '{"pipeline": {"inspect": {"timeout_ms": 60000}}}' >"$out/pdf-config.json"
	median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
	# run N CMD...: N runs of CMD under GNU time, each in a fresh store;
	# prints the medians of wall ms, CPU ms and max RSS kB.
	run() {
		local n=$1 s e; shift
		for _ in $(seq "$n"); do
			rm -rf "$out/pdf-store"
			s=$(date +%s%N)
			/usr/bin/time -f '%U %S %M' -o "$out/pdf-time" "$@" >/dev/null 2>&1
			e=$(date +%s%N)
			awk -v wall=$(( (e - s) / 100000 )) '{printf "%.1f %d %d\n", wall/10, ($1+$2)*1000, $3}' "$out/pdf-time"
		done >"$out/pdf-runs"
		echo "wall $(cut -d' ' -f1 "$out/pdf-runs" | median) ms, cpu $(cut -d' ' -f2 "$out/pdf-runs" | median) ms, max RSS $(( $(cut -d' ' -f3 "$out/pdf-runs" | median) / 1024 )) MiB"
	}
	for bin in "${bins[@]}"; do
		echo "== $bin: $(stat -c %s "$bin") bytes" | tee -a "$out/pdf.txt"
		for _ in $(seq 15); do GODEBUG=inittrace=1 "$bin" version 2>&1 >/dev/null | awk '/^init/ {s+=$5} END {print s}'; done |
			median | sed 's/^/  package inits (ms, median of 15): /' | tee -a "$out/pdf.txt"
		echo "  small result: $(run 15 "$bin" transform --store "$out/pdf-store" "$out/pdf-small.json")" | tee -a "$out/pdf.txt"
		cache=$(mktemp -d)
		for _ in $(seq 5); do
			rm -rf "$cache"/*
			XDG_CACHE_HOME=$cache run 1 "$bin" transform --store "$out/pdf-store" "$out/pdf-chromium.json"
		done | sed 's/^/  first PDF, empty cache: /' | tee -a "$out/pdf.txt"
		echo "  first PDF, filled cache: $(XDG_CACHE_HOME=$cache run 5 "$bin" transform --store "$out/pdf-store" "$out/pdf-chromium.json")" | tee -a "$out/pdf.txt"
		echo "  100 pages: $(XDG_CACHE_HOME=$cache run 5 "$bin" transform --config "$out/pdf-config.json" --store "$out/pdf-store" "$out/pdf-hundred.json")" | tee -a "$out/pdf.txt"
		rm -rf "$cache"
	done
	go test ./inspect -run '^$' -bench 'BenchmarkPDF' -benchtime 5x -count 5 | tee "$out/pdf-go.txt"
fi
if [ "$what" = steady ]; then
	runs=${BENCH_STEADY_RUNS:-5}
	CGO_ENABLED=0 go build -o "$out/mcpx" ./cmd/mcpx
	CGO_ENABLED=0 go build -o "$out/floor" ./bench/floor # static, as mcpx is
	go build -o "$out/benchdata" ./bench/benchdata
	go build -o "$out/interleave" ./bench/interleave
	go build -o "$out/gatewaybench" ./bench/gatewaybench
	ev=$(./scripts/conformance-tools.sh | tail -n 1)/everything
	"$out/benchdata" 10 "$out/r10.json"
	# an existing store holding one artifact, copied fresh before each run
	rm -rf "$out/steady-store0"; mkdir -p "$out/steady-store0"
	printf '{"content":[{"type":"text","text":"%s"}]}' "$(head -c 22500 /dev/urandom | base64 -w0)" >"$out/steady-one.json"
	"$out/mcpx" transform --store "$out/steady-store0" --server warm "$out/steady-one.json" >/dev/null
	echo "== uptime: $(uptime)"
	echo "== 10 MiB PDF in an existing store vs bench/floor: $runs checks of 30 interleaved rounds (target: median at most 1.25x in every check)"
	for i in $(seq "$runs"); do
		"$out/interleave" -n 30 -warmup 3 \
			-prepare "rm -rf $out/steady-store $out/steady-floor; cp -a $out/steady-store0 $out/steady-store; mkdir -p $out/steady-floor" \
			"$out/mcpx transform --store $out/steady-store --server tableau --tool download_workbook $out/r10.json" \
			"$out/floor $out/r10.json $out/steady-floor" >"$out/steady-pdf-$i.txt"
		ratio=$(awk '/ mcpx / {for (f = 1; f <= NF; f++) if ($f ~ /^[0-9.]+x$/) {sub(/x$/, "", $f); print $f}}' "$out/steady-pdf-$i.txt")
		ok=$(awk -v r="$ratio" 'BEGIN {print (r <= 1.25) ? "held" : "MISSED"}')
		echo "check $i: $(grep ' mcpx ' "$out/steady-pdf-$i.txt" | awk '{print $3, $4}') vs floor $(grep ' floor ' "$out/steady-pdf-$i.txt" | awk '{print $3, $4}'): ${ratio}x $ok"
	done | tee "$out/steady-pdf.txt"
	echo "10 MiB PDF: $(grep -c ' held$' "$out/steady-pdf.txt") of $runs checks held" | tee -a "$out/steady-pdf.txt"
	echo "== stdio hop, mcpx wrap vs the bare relay: $runs checks of 5 x 1000 interleaved calls (target: p50 within 25 µs and at least 0.9x the calls/s in every check)"
	export MCPX_HOME=$out/steady-home
	for i in $(seq "$runs"); do
		"$out/gatewaybench" stdio -n 1000 -runs 5 -direct "$ev" -relay "$out/gatewaybench relay $ev" \
			-via "$out/mcpx wrap -- $ev" >"$out/steady-stdio-$i.txt"
		line=$(grep '^via - relay:' "$out/steady-stdio-$i.txt")
		ok=$(echo "$line" | awk '{p = $5 + 0; for (f = 1; f <= NF; f++) if ($f ~ /^[0-9.]+x$/) {sub(/x$/, "", $f); x = $f + 0} print (p <= 25 && x >= 0.9) ? "held" : "MISSED"}')
		echo "check $i: $line $ok"
	done | tee "$out/steady-stdio.txt"
	echo "stdio hop: $(grep -c ' held$' "$out/steady-stdio.txt") of $runs checks held" | tee -a "$out/steady-stdio.txt"
	echo "== uptime: $(uptime)"
fi
echo "raw output in $out"

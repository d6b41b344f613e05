// Package reliability holds the reliability suite, behind the build tag
// "reliability" (go test -tags reliability ./tests/reliability/):
// faults (the gateway killed with SIGKILL mid-run, a full disk, the
// object store stopped mid-put or slowed to a trickle, one of two
// replicas on a bucket killed mid-upload) and load (64 concurrent
// sessions calling tools that return 1-10 MB binaries through a built
// `mcpx serve --listen`, with "shared" and "pool" instances, and beside
// WASM plugins that loop, allocate without bound or answer garbage), and
// memory (ten 49-megapixel images at once for a client that takes images,
// within serve.limits.max_work_bytes). Each
// test checks what the store promises under faults: every artifact a
// model was told about reads back byte-exact, or the model was told it
// was not stored.
// scripts/test.sh runs the suite in one bounded step.
package reliability

package cli

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// unlinked are packages (path prefixes) that must stay out of the mcpx
// binary: every mcpx process pays for each package's initialisation, and
// santhosh-tekuri/jsonschema's compiles metaschemas, ~10 ms per process
// (BENCHMARKS.md, "Start-up"). mcp-go's server links it, and
// mcp-go's client packages link the server (client/transport's
// inprocess.go); the gateway's upstreams use
// gateway/internal/upstreamhttp instead. Tests may import them.
//
// Nor does it link the Prometheus client (its default registry with Go
// and process collectors, procfs), the OTLP exporter and its generated
// types, gRPC or protobuf (descriptor registration; protobuf's detrand
// hashes the executable at init), or the go-sdk, which the gateway does
// not need: telemetry/promtext and telemetry/otlphttp do their work
// without that initialisation in every process (BENCHMARKS.md,
// "Start-up"). Nor minio-go, whose regexps, CPU probing and
// compression tables cost over a millisecond of it: the S3 store speaks
// through the AWS SDK's client (BENCHMARKS.md, "Start-up").
// Nor runtime/metrics, whose init builds a description of every metric
// (0.1 ms): telemetry/promtext reads its three gauges from the runtime
// directly (BENCHMARKS.md, "Start-up").
var unlinked = []string{
	"github.com/minio/minio-go",
	"github.com/klauspost/cpuid",
	"github.com/mark3labs/mcp-go/server",
	"github.com/mark3labs/mcp-go/client",
	"github.com/santhosh-tekuri/jsonschema",
	"github.com/prometheus/client_golang",
	"github.com/prometheus/procfs",
	"go.opentelemetry.io/proto/otlp",
	"go.opentelemetry.io/otel/exporters",
	"google.golang.org/grpc",
	"google.golang.org/protobuf",
	"github.com/modelcontextprotocol/go-sdk",
	"runtime/metrics",
}

// linked are packages the one binary must link: every command runs in
// it, with the gateway, jq and the S3 store.
var linked = []string{
	"github.com/mcpx-dev/mcpx/gateway",
	"github.com/mcpx-dev/mcpx/query/jq",
	"github.com/mcpx-dev/mcpx/store/s3store",
	"github.com/mcpx-dev/mcpx/web",
	"github.com/mcpx-dev/mcpx/telemetry",
}

func TestBinaryLinks(t *testing.T) {
	t.Parallel()
	const bin = "../.."
	out, err := exec.Command("go", "list", "-deps", bin).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", bin, err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps %s listed only %d packages: %q", bin, len(deps), deps)
	}
	for _, pkg := range deps {
		for _, bad := range unlinked {
			if pkg == bad || strings.HasPrefix(pkg, bad+"/") {
				t.Errorf("%s links %s; see unlinked", bin, pkg)
			}
		}
	}
	for _, want := range linked {
		if !slices.Contains(deps, want) {
			t.Errorf("%s does not link %s: every command runs in the one binary", bin, want)
		}
	}
}

// initBytes is the most one of mcpx's own packages may allocate in its
// initialisation, which every mcpx process runs: the layers' registrations
// take 3.3 KB. A regexp compiled at init takes 2 to 5 KB and a reflection
// walk more; build such things on first use (sync.OnceValue), as
// cli/config's envRef and gateway/internal/schema's schemaFields are
// (BENCHMARKS.md, "Start-up").
const initBytes = 4 << 10

// TestInitAllocations runs this test binary, which links the packages of
// the mcpx binary, with GODEBUG=inittrace=1 and holds each of mcpx's own
// packages but this one (whose test files add to its init) to initBytes.
func TestInitAllocations(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	const self = "github.com/mcpx-dev/mcpx/cmd/mcpx/internal/cli"
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		// init PKG @0.51 ms, 0.014 ms clock, 2048 bytes, 12 allocs
		f := strings.Fields(l)
		if len(f) < 10 || f[0] != "init" || f[8] != "bytes," || !strings.HasPrefix(f[1], "github.com/mcpx-dev/mcpx/") || f[1] == self {
			continue
		}
		n++
		if b, err := strconv.Atoi(f[7]); err != nil || b > initBytes {
			t.Errorf("%s allocates %s bytes in its init (%s allocs), over %d: build it on first use", f[1], f[7], f[9], initBytes)
		}
	}
	if n < 10 {
		t.Fatalf("%d of mcpx's packages in the init trace:\n%s", n, out)
	}
}

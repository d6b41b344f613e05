package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// unlinked are packages (path prefixes) that must stay out of the mcpx
// binary: every mcpx process pays for each package's initialisation, and
// santhosh-tekuri/jsonschema's compiles metaschemas, ~10 ms per process
// (issue 8, BENCHMARKS.md "Process start-up"). mcp-go's server links it,
// and mcp-go's client packages link the server (client/transport's
// inprocess.go); the gateway's upstreams use gateway/internal/upstreamhttp
// instead. Tests may import them.
//
// Neither binary links the Prometheus client (its default registry with
// Go and process collectors, procfs), the OTLP exporter, gRPC or
// protobuf (descriptor registration; protobuf's detrand hashes the
// executable at init): telemetry/promtext and telemetry/otlphttp do
// their work without that initialisation in every process
// (BENCHMARKS.md, "Package initialisation").
var unlinked = []string{
	"github.com/mark3labs/mcp-go/server",
	"github.com/mark3labs/mcp-go/client",
	"github.com/santhosh-tekuri/jsonschema",
	"github.com/prometheus/client_golang",
	"github.com/prometheus/procfs",
	"go.opentelemetry.io/proto/otlp",
	"go.opentelemetry.io/otel/exporters",
	"google.golang.org/grpc",
	"google.golang.org/protobuf",
}

// serverOnly are packages (path prefixes) only cmd/mcpx-server may link:
// the S3 store's, jq's, the gateway's and its HTTP surface's, the
// OpenTelemetry SDK's (internal/cli/parts says why), and the go-sdk's,
// which the gateway does not need.
var serverOnly = []string{
	"github.com/aws/aws-sdk-go-v2",
	"github.com/aws/smithy-go",
	"github.com/itchyny/gojq",
	"github.com/mcpx-dev/mcpx/gateway",
	"github.com/mark3labs/mcp-go",
	"github.com/google/jsonschema-go",
	"github.com/golang-jwt/jwt",
	"net/http",
	"go.opentelemetry.io/otel/sdk",
	"github.com/modelcontextprotocol/go-sdk",
}

func TestBinaryLinksNoServerLibraries(t *testing.T) {
	for _, b := range []struct {
		pkg string
		bad []string
	}{
		{"../../cmd/mcpx", append(unlinked[:len(unlinked):len(unlinked)], serverOnly...)},
		{"../../cmd/mcpx-server", unlinked},
	} {
		out, err := exec.Command("go", "list", "-deps", b.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", b.pkg, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 50 {
			t.Fatalf("go list -deps %s listed only %d packages: %q", b.pkg, len(deps), deps)
		}
		for _, pkg := range deps {
			for _, bad := range b.bad {
				if pkg == bad || strings.HasPrefix(pkg, bad+"/") {
					t.Errorf("%s links %s; see unlinked and serverOnly", b.pkg, pkg)
				}
			}
		}
	}
}

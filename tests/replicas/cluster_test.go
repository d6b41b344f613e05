package replicas

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/mcpx-dev/mcpx/internal/mcpxbin"
	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
)

// envHAProxy names the haproxy binary (scripts/haproxy-tools.sh).
const envHAProxy = "MCPX_HAPROXY"

// haproxyConfig is the load balancer's config; docs/operations.md shows it
// with the ports of docsPorts (TestDeployDocShowsHAProxyConfig). A
// 2026-07-28 request carries no Mcp-Session-Id, so the stick rules pass
// it by and round robin sends consecutive requests to alternate
// replicas; a 2025-11-25 session is pinned to the replica that answered
// its initialize, the only one that knows it. X-Mcpx-Replica names the
// replica that answered (the test checks where each request went).
const haproxyConfig = `global
    maxconn 4096

defaults
    mode http
    timeout connect 5s
    # subscriptions/listen and 2025-11-25 GET streams stay open: mcpx
    # sends a keep-alive comment on idle streams, well within this
    timeout client 1h
    timeout server 1h
    timeout http-request 10s
    timeout http-keep-alive 30s

frontend mcp
    bind {{.Front}}
    default_backend mcpx

backend mcpx
    balance roundrobin
    # 2025-11-25 sessions only: pin a session to the replica that made it
    stick-table type string len 128 size 100k expire 1h
    stick on req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
    http-response set-header X-Mcpx-Replica %[srv_name]
    server r1 {{.R1}} check inter 2s
    server r2 {{.R2}} check inter 2s

frontend stats
    bind {{.Stats}}
    stats enable
    stats uri /stats
`

// lbAddrs are the addresses the haproxy config names.
type lbAddrs struct{ Front, Stats, R1, R2 string }

// docsPorts are the addresses docs/operations.md uses.
var docsPorts = lbAddrs{Front: "0.0.0.0:8080", Stats: "127.0.0.1:8404", R1: "10.0.0.11:8081", R2: "10.0.0.12:8081"}

func renderHAProxy(a lbAddrs) string {
	var b bytes.Buffer
	if err := template.Must(template.New("haproxy").Parse(haproxyConfig)).Execute(&b, a); err != nil {
		panic(err)
	}
	return b.String()
}

// need returns the binary $env names; without it the test is skipped, or
// fails under CI=true (the test command must provide it).
func need(t *testing.T, env, script string) string {
	t.Helper()
	bin := os.Getenv(env)
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("$%s is not set: run %s (the test command does)", env, script)
		}
		t.Skipf("set $%s (%s=$(%s | tail -n 1))", env, env, script)
	}
	return bin
}

// mcpx is the mcpx binary, built once per test binary.
func mcpx(t *testing.T) string { return mcpxbin.Path(t) }

// cluster is two replicas on one bucket behind haproxy.
type cluster struct {
	// URL is haproxy's MCP endpoint; Stats its stats page.
	URL, Stats string
	// Replicas are the replicas' own MCP endpoints, by haproxy server name.
	Replicas map[string]string
	// GCConfig is a config on the same store whose retention removes
	// every artifact ("mcpx artifacts gc --config GCConfig").
	GCConfig string
	dir      string
}

// tokens authenticate two principals.
var tokens = map[string]string{"tok-alice": "alice", "tok-bob": "bob"}

// urlSecret is the replicas' shared signing key of download URLs.
const urlSecret = "replicas-test-url-secret-0123456789abcdef"

func startCluster(t *testing.T) *cluster {
	t.Helper()
	haproxy := need(t, envHAProxy, "scripts/haproxy-tools.sh")
	s3 := s3test.Start(t)
	bucket := s3.Bucket(t)
	bin := mcpx(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shared := sharedUpstream(t)
	dir := t.TempDir()
	a := lbAddrs{Front: freeAddr(t), Stats: freeAddr(t), R1: freeAddr(t), R2: freeAddr(t)}
	c := &cluster{URL: "http://" + a.Front + "/mcp", Stats: "http://" + a.Stats + "/stats", Replicas: map[string]string{"r1": "http://" + a.R1 + "/mcp", "r2": "http://" + a.R2 + "/mcp"}, dir: dir}
	st := map[string]any{"s3": map[string]any{"endpoint": s3.Endpoint, "bucket": bucket, "prefix": "mcpx", "path_style": true, "access_key": s3test.AccessKey, "secret_key": s3test.SecretKey}}
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"blobs":  map[string]any{"command": self, "args": []string{"-test.run=^$"}, "env": map[string]string{upstreamEnv: "1"}},
			"shared": map[string]any{"url": shared},
		},
		"store": st,
		"serve": map[string]any{"base_url": "http://" + a.Front, "url_secret": urlSecret, "tokens": tokens},
	}
	writeJSON(t, filepath.Join(dir, "replica.json"), cfg)
	c.GCConfig = filepath.Join(dir, "gc.json")
	writeJSON(t, c.GCConfig, map[string]any{"store": map[string]any{"s3": st["s3"], "retention": map[string]any{"max_bytes": 1}}})
	for _, r := range []struct{ name, addr string }{{"r1", a.R1}, {"r2", a.R2}} {
		start(t, filepath.Join(dir, r.name+".log"), r.addr, bin, "serve", "--config", filepath.Join(dir, "replica.json"), "--listen", r.addr)
	}
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfgPath, []byte(renderHAProxy(a)), 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, filepath.Join(dir, "haproxy.log"), a.Front, haproxy, "-db", "-f", cfgPath)
	return c
}

// Log returns a replica's (or haproxy's) log so far.
func (c *cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
	return string(b)
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// start runs a process until the test ends, its output in logPath, and
// waits until addr accepts connections.
func start(t *testing.T, logPath, addr, bin string, args ...string) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "MCPX_HOME="+filepath.Dir(logPath))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s %s exited:\n%s", bin, strings.Join(args, " "), b)
		default:
		}
		if conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("%s does not listen on %s:\n%s", bin, addr, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

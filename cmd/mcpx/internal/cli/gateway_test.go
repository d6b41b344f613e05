package cli

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	gatewayconfig "github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/store"
)

// 50 slow-loris connections stayed open. The --listen server
// cuts a connection whose headers do not arrive within the timeout.
func TestHTTPServerCutsSlowLoris(t *testing.T) {
	t.Parallel()
	srv := newHTTPServer(http.NotFoundHandler(), gatewayconfig.Limits{ReadHeaderTimeout: store.Duration(300 * time.Millisecond)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	const conns = 50
	closed := make(chan error, conns)
	for range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "); err != nil {
			t.Fatal(err)
		}
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err := io.Copy(io.Discard, c) // returns when the server closes
			closed <- err
		}()
	}
	for range conns {
		if err := <-closed; err != nil {
			t.Fatalf("a slow-loris connection stayed open: %v", err)
		}
	}
}

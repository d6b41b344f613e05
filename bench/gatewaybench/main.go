// Command gatewaybench measures an MCP server directly and through the
// gateway, side by side in one run: over stdio, one call at a
// time, and over streamable HTTP with concurrent clients. The client is
// minimal (raw JSON-RPC lines, one reused HTTP connection per client) so
// that its own cost stays small next to what it measures. Runs alternate
// between the two targets and the medians of the runs are reported:
// on a loaded machine single runs are noisy.
//
//	gatewaybench stdio -n 2000 -runs 5 -direct 'everything' -relay 'gatewaybench relay everything' -via '/tmp/mcpx wrap -- everything'
//	gatewaybench http -clients 16 -n 500 -runs 5 -direct http://127.0.0.1:8001/mcp -via http://127.0.0.1:8002/mcp
//	gatewaybench http -direct-stateless -names one,two -direct http://127.0.0.1:8080/mcp -via http://127.0.0.1:8090/mcp
//	gatewaybench http-relay -listen 127.0.0.1:8003 everything
//	gatewaybench http -clients 1 -target old=http://127.0.0.1:8090/mcp -target new=stateless+http://127.0.0.1:8090/mcp -target proxy=http://127.0.0.1:9090/everything/mcp
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gatewaybench stdio|http|text|relay|http-relay|snapshot-server [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "stdio":
		err = stdioMain(os.Args[2:])
	case "http":
		err = httpMain(os.Args[2:])
	case "relay":
		err = relayMain(os.Args[2:])
	case "http-relay":
		err = httpRelayMain(os.Args[2:])
	case "text":
		err = textMain(os.Args[2:])
	case "snapshot-server":
		err = snapshotServerMain(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gatewaybench:", err)
		os.Exit(1)
	}
}

// relayMain runs a command and copies bytes between it and this
// process's stdin and stdout, nothing else: the floor of any stdio relay
// (the third target of a stdio comparison).
func relayMain(args []string) error {
	if len(args) == 0 {
		return errors.New("relay: a command is required")
	}
	// Both directions go through this process, as through a gateway.
	cmd, in, out, err := startPiped(args)
	if err != nil {
		return err
	}
	go func() {
		_, _ = io.Copy(in, os.Stdin)
		in.Close()
	}()
	_, _ = io.Copy(os.Stdout, out)
	return cmd.Wait()
}

// startPiped starts command with pipes to its stdin and from its stdout.
// Its stderr is discarded: the go-sdk example logs every message there,
// and a reader of it (a terminal, a pipe) would be charged to the direct
// run. Through the gateway the gateway drains it, which is part of what
// is measured.
func startPiped(command []string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, error) {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stderr = nil
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	return cmd, in, out, nil
}

// run is one run's figures.
type run struct {
	p50, p99 time.Duration
	perSec   float64
}

func summarize(lat []time.Duration, wall time.Duration) run {
	slices.Sort(lat)
	return run{
		p50:    lat[len(lat)/2],
		p99:    lat[len(lat)*99/100],
		perSec: float64(len(lat)) / wall.Seconds(),
	}
}

// report prints each run and the medians of each target, and how the
// last target compares with the first (the direct one).
func report(names []string, runs [][]run) {
	med := make([]run, len(runs))
	for i, rs := range runs {
		for j, r := range rs {
			fmt.Printf("%-7s run %d: p50 %7.1f µs  p99 %7.1f µs  %8.0f calls/s\n", names[i], j+1, us(r.p50), us(r.p99), r.perSec)
		}
		med[i] = run{
			p50:    median(rs, func(r run) float64 { return float64(r.p50) }),
			p99:    median(rs, func(r run) float64 { return float64(r.p99) }),
			perSec: float64(median(rs, func(r run) float64 { return r.perSec })),
		}
	}
	for i, m := range med {
		fmt.Printf("median %-7s p50 %7.1f µs  p99 %7.1f µs  %8.0f calls/s\n", names[i], us(m.p50), us(m.p99), m.perSec)
	}
	for i := 1; i < len(med); i++ {
		fmt.Printf("%s - %s: p50 %+.1f µs (%.2fx), p99 %+.1f µs; calls/s %s/%s %.2fx\n", names[i], names[0], us(med[i].p50-med[0].p50), float64(med[i].p50)/float64(med[0].p50), us(med[i].p99-med[0].p99), names[i], names[0], med[i].perSec/med[0].perSec)
	}
	// the gateways against the relay, the floor of any proxy
	if len(names) > 2 && names[1] == "relay" {
		for i := 2; i < len(med); i++ {
			fmt.Printf("%s - relay: p50 %+.1f µs; calls/s %s/relay %.2fx\n", names[i], us(med[i].p50-med[1].p50), names[i], med[i].perSec/med[1].perSec)
		}
	}
}

func median(rs []run, f func(run) float64) time.Duration {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return time.Duration(v[len(v)/2])
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

const (
	initParams = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"gatewaybench","version":"1"}}`
	callParams = `{"name":"greet","arguments":{"name":"bench"}}`
	// statelessCallParams is callParams as a 2026-07-28 request
	statelessCallParams = `{"name":"greet","arguments":{"name":"bench"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
)

// stdioPeer is a server process spoken to over its stdin and stdout.
type stdioPeer struct {
	cmd    *exec.Cmd
	params string // of each tools/call
	in     io.WriteCloser
	out    *bufio.Reader
	id     int
	buf    []byte
	long   []byte
}

// startStdio starts command and initializes it, or, stateless, sends it
// 2026-07-28 requests on a pipe that is never initialized.
func startStdio(command string, stateless bool) (*stdioPeer, error) {
	cmd, in, out, err := startPiped(strings.Fields(command))
	if err != nil {
		return nil, err
	}
	p := &stdioPeer{cmd: cmd, params: callParams, in: in, out: bufio.NewReaderSize(out, 64<<10)}
	if stateless {
		p.params = statelessCallParams
		return p, nil
	}
	if _, err := p.call("initialize", initParams); err != nil {
		return nil, fmt.Errorf("%s: initialize: %w", command, err)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		return nil, err
	}
	return p, nil
}

// call sends one request and reads lines until its response.
func (p *stdioPeer) call(method, params string) ([]byte, error) {
	p.id++
	p.buf = append(p.buf[:0], `{"jsonrpc":"2.0","id":`...)
	p.buf = strconv.AppendInt(p.buf, int64(p.id), 10)
	p.buf = append(p.buf, `,"method":"`...)
	p.buf = append(p.buf, method...)
	p.buf = append(p.buf, `","params":`...)
	p.buf = append(p.buf, params...)
	p.buf = append(p.buf, "}\n"...)
	if _, err := p.in.Write(p.buf); err != nil {
		return nil, err
	}
	want := []byte(`"id":` + strconv.Itoa(p.id) + `,`)
	want2 := []byte(`"id":` + strconv.Itoa(p.id) + `}`)
	for {
		line, err := p.out.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer (a large result): gathered.
			p.long = append(p.long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = p.out.ReadSlice('\n')
				p.long = append(p.long, line...)
			}
			line = p.long
		}
		if err != nil {
			return nil, err
		}
		if bytes.Contains(line, want) || bytes.Contains(line, want2) {
			if bytes.Contains(line, []byte(`"error"`)) || bytes.Contains(line, []byte(`"isError":true`)) {
				return nil, fmt.Errorf("error response: %s", line)
			}
			return line, nil
		}
	}
}

func (p *stdioPeer) stop() {
	p.in.Close()
	_ = p.cmd.Wait()
}

func stdioMain(args []string) error {
	fs := flag.NewFlagSet("stdio", flag.ExitOnError)
	n := fs.Int("n", 2000, "calls per run")
	runs := fs.Int("runs", 5, "runs per target (interleaved)")
	warm := fs.Int("warmup", 300, "calls before the first run")
	direct := fs.String("direct", "", "the server's command line")
	via := fs.String("via", "", "the command line of the gateway in front of it")
	relay := fs.String("relay", "", "optional: the command line of a bare byte relay in front of it (gatewaybench relay SERVER)")
	base := fs.String("base", "", "optional: another gateway's command line measured beside -via (an earlier build, say)")
	directStateless := fs.Bool("direct-stateless", false, "also send -direct's server stateless 2026-07-28 requests on a pipe never initialized (target direct-2026); -via is optional then")
	_ = fs.Parse(args)
	if *direct == "" || *via == "" && !*directStateless {
		return errors.New("-direct and -via are required")
	}
	names, cmds := []string{"direct"}, []string{*direct}
	stateless := map[int]bool{}
	if *directStateless {
		stateless[len(cmds)] = true
		names, cmds = append(names, "direct-2026"), append(cmds, *direct)
	}
	if *relay != "" {
		names, cmds = append(names, "relay"), append(cmds, *relay)
	}
	if *base != "" {
		names, cmds = append(names, "base"), append(cmds, *base)
	}
	if *via != "" {
		names, cmds = append(names, "via"), append(cmds, *via)
	}
	peers := make([]*stdioPeer, len(cmds))
	for i, c := range cmds {
		p, err := startStdio(c, stateless[i])
		if err != nil {
			return err
		}
		defer p.stop()
		if r, err := p.call("tools/call", p.params); err != nil {
			return fmt.Errorf("%s: %w", c, err)
		} else if i == 0 {
			fmt.Printf("response: %s", r)
		}
		for range *warm {
			if _, err := p.call("tools/call", p.params); err != nil {
				return err
			}
		}
		peers[i] = p
	}
	all := make([][]run, len(peers))
	costs := make([][]costPerCall, len(peers))
	lat := make([]time.Duration, *n)
	for r := 0; r < *runs; r++ {
		// Each round starts with the next target: the target run last
		// in a round measured 8-12 µs slower than the same binary run
		// before it, on a 2-core machine.
		for k := range peers {
			i := (r + k) % len(peers)
			p := peers[i]
			before := readProcCost(p.cmd.Process.Pid)
			start := time.Now()
			for k := range lat {
				t := time.Now()
				if _, err := p.call("tools/call", p.params); err != nil {
					return err
				}
				lat[k] = time.Since(t)
			}
			all[i] = append(all[i], summarize(lat, time.Since(start)))
			if c, ok := perCall(before, readProcCost(p.cmd.Process.Pid), *n); ok {
				costs[i] = append(costs[i], c)
			}
		}
	}
	fmt.Printf("stdio, one call at a time, %d calls x %d interleaved runs\n", *n, *runs)
	report(names, all)
	reportCosts(names, costs)
	return nil
}

// httpClient is one client of a streamable HTTP endpoint: a session
// (direct) or stateless 2026-07-28 requests (stateless).
type httpClient struct {
	url       string
	hc        *http.Client
	stateless bool
	session   string
	id        int
}

func (c *httpClient) post(method, params string) ([]byte, error) {
	c.id++
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(c.id) + `,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.stateless {
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		req.Header.Set("Mcp-Name", "greet")
	} else if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s: %s: %s", method, resp.Status, b)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" && !c.stateless {
		c.session = id
	}
	if i := bytes.LastIndex(b, []byte("data: ")); i >= 0 {
		b = b[i+len("data: "):]
	}
	if bytes.Contains(b, []byte(`"error"`)) || bytes.Contains(b, []byte(`"isError":true`)) {
		return nil, fmt.Errorf("%s: error response: %s", method, b)
	}
	return b, nil
}

func (c *httpClient) greet() error {
	params := callParams
	if c.stateless {
		params = `{"name":"greet","arguments":{"name":"bench"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
	}
	_, err := c.post("tools/call", params)
	return err
}

func newHTTPClients(url string, n int, stateless bool) ([]*httpClient, error) {
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: n}
	hc := &http.Client{Transport: tr}
	cs := make([]*httpClient, n)
	for i := range cs {
		c := &httpClient{url: url, hc: hc, stateless: stateless}
		if !stateless {
			if _, err := c.post("initialize", initParams); err != nil {
				return nil, err
			}
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Session-Id", c.session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
			resp, err := hc.Do(req)
			if err != nil {
				return nil, err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if err := c.greet(); err != nil {
			return nil, fmt.Errorf("%s: %w", url, err)
		}
		cs[i] = c
	}
	return cs, nil
}

// httpRun has every client call n times, at once, and returns the figures.
func httpRun(cs []*httpClient, n int) (run, error) {
	lat := make([]time.Duration, len(cs)*n)
	errs := make(chan error, len(cs))
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range cs {
		wg.Add(1)
		go func(l []time.Duration) {
			defer wg.Done()
			for k := range l {
				t := time.Now()
				if err := c.greet(); err != nil {
					errs <- err
					return
				}
				l[k] = time.Since(t)
			}
		}(lat[i*n : (i+1)*n])
	}
	wg.Wait()
	wall := time.Since(start)
	select {
	case err := <-errs:
		return run{}, err
	default:
	}
	return summarize(lat, wall), nil
}

func httpMain(args []string) error {
	fs := flag.NewFlagSet("http", flag.ExitOnError)
	clients := fs.Int("clients", 16, "concurrent clients")
	n := fs.Int("n", 300, "calls per client per run")
	runs := fs.Int("runs", 5, "runs per target (interleaved)")
	direct := fs.String("direct", "", "the server's MCP endpoint (sessions, 2025-11-25)")
	via := fs.String("via", "", "the gateway's MCP endpoint (stateless 2026-07-28 requests)")
	directStateless := fs.Bool("direct-stateless", false, "send stateless 2026-07-28 requests to -direct too (two gateways compared)")
	names := fs.String("names", "direct,via", "the two targets' names in the report")
	var more multiFlag
	fs.Var(&more, "target", "name=URL (sessions, 2025-11-25) or name=stateless+URL (2026-07-28 requests); repeatable, instead of -direct and -via")
	_ = fs.Parse(args)
	type target struct {
		name, url string
		stateless bool
	}
	var want []target
	for _, t := range more {
		name, u, ok := strings.Cut(t, "=")
		if !ok {
			return fmt.Errorf("-target %q: want name=URL", t)
		}
		u, stateless := strings.CutPrefix(u, "stateless+")
		want = append(want, target{name, u, stateless})
	}
	if len(want) == 0 {
		if *direct == "" || *via == "" {
			return errors.New("-direct and -via (or -target) are required")
		}
		label := strings.Split(*names, ",")
		if len(label) != 2 {
			return errors.New("-names takes two comma-separated names")
		}
		want = []target{{label[0], *direct, *directStateless}, {label[1], *via, true}}
	}
	label := make([]string, len(want))
	targets := make([][]*httpClient, len(want))
	for i, t := range want {
		cs, err := newHTTPClients(t.url, *clients, t.stateless)
		if err != nil {
			return err
		}
		if _, err := httpRun(cs, 20); err != nil { // warm up
			return err
		}
		label[i], targets[i] = t.name, cs
	}
	all := make([][]run, len(targets))
	for r := 0; r < *runs; r++ {
		for i, cs := range targets {
			res, err := httpRun(cs, *n)
			if err != nil {
				return err
			}
			all[i] = append(all[i], res)
		}
	}
	fmt.Printf("streamable HTTP, %d concurrent clients x %d calls x %d interleaved runs\n", *clients, *n, *runs)
	report(label, all)
	return nil
}

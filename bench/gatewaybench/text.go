package main

// The text path side by side: one large tool result (a
// 600,000-character accessibility snapshot, as @playwright/mcp's
// browser_snapshot answers) fetched one call at a time from a stdio
// server directly and through HTTP proxies in front of it (a
// pass-through proxy, mcpx serve), runs interleaved, p50 of each.
//
//	gatewaybench snapshot-server [-vary] RESULT.json
//	gatewaybench text -runs 15 -stdio 'gatewaybench snapshot-server r.json' -http mcp-proxy=http://127.0.0.1:9090/snap/mcp -http mcpx=http://127.0.0.1:9091/mcp

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// snapshotServerMain serves over stdio one tool, browser_snapshot, whose
// result is the CallToolResult in a file, written as it is: the cheapest
// server, so that what is measured is the path, not the server. With
// -vary each answer's first text starts with "call N ", so that a store
// behind a proxy stores new bytes each time, as a page that changes does.
func snapshotServerMain(args []string) error {
	fs := flag.NewFlagSet("snapshot-server", flag.ExitOnError)
	vary := fs.Bool("vary", false, "start each answer's first text with the call's number")
	_ = fs.Parse(args)
	if fs.NArg() != 1 {
		return errors.New("snapshot-server: RESULT.json is required")
	}
	result, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	result = bytes.TrimSpace(result)
	at := bytes.Index(result, []byte(`"text":"`)) + len(`"text":"`)
	calls := 0
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := bufio.NewWriterSize(os.Stdout, 64<<10)
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			id := gjson.GetBytes(line, "id")
			var res []byte
			switch gjson.GetBytes(line, "method").String() {
			case "initialize":
				pv := gjson.GetBytes(line, "params.protocolVersion").String()
				res = fmt.Appendf(nil, `{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"snapshot","version":"1"}}`, pv)
			case "tools/list":
				res = []byte(`{"tools":[{"name":"browser_snapshot","description":"Capture an accessibility snapshot of the current page","inputSchema":{"type":"object","properties":{}}}]}`)
			case "tools/call":
				res = result
				if calls++; *vary && at >= len(`"text":"`) {
					res = fmt.Appendf(append([]byte(nil), result[:at]...), "call %d ", calls)
					res = append(res, result[at:]...)
				}
			case "ping":
				res = []byte(`{}`)
			}
			if id.Exists() {
				if res == nil {
					fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`+"\n", id.Raw)
				} else {
					fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":`, id.Raw)
					out.Write(res)
					out.WriteString("}\n")
				}
				if ferr := out.Flush(); ferr != nil {
					return ferr
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// textTarget is one way to the server: its name and one call.
type textTarget struct {
	name string
	call func() (int, error) // the response's size
	stop func()
}

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func textMain(args []string) error {
	fs := flag.NewFlagSet("text", flag.ExitOnError)
	runs := fs.Int("runs", 15, "calls per target, interleaved")
	warm := fs.Int("warmup", 3, "calls per target before the first")
	tool := fs.String("tool", "browser_snapshot", "the tool to call")
	direct := fs.String("stdio", "", "the server's command line (the direct target)")
	var viaHTTP multiFlag
	fs.Var(&viaHTTP, "http", "NAME=URL of a streamable HTTP endpoint in front of the server (repeatable; a 2025-11-25 session each)")
	_ = fs.Parse(args)
	if *direct == "" || len(viaHTTP) == 0 {
		return errors.New("-stdio and at least one -http are required")
	}
	params := `{"name":"` + *tool + `","arguments":{}}`
	var targets []textTarget
	p, err := startStdio(*direct, false)
	if err != nil {
		return err
	}
	targets = append(targets, textTarget{name: "direct", call: func() (int, error) {
		b, err := p.call("tools/call", params)
		return len(b), err
	}, stop: p.stop})
	for _, nv := range viaHTTP {
		name, url, ok := strings.Cut(nv, "=")
		if !ok {
			return fmt.Errorf("-http %q: want NAME=URL", nv)
		}
		c := &httpClient{url: url, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}}
		if _, err := c.post("initialize", initParams); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		if resp, err := c.hc.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		targets = append(targets, textTarget{name: name, call: func() (int, error) {
			b, err := c.post("tools/call", params)
			return len(b), err
		}, stop: func() {}})
	}
	defer func() {
		for _, t := range targets {
			t.stop()
		}
	}()
	sizes := make([]int, len(targets))
	for i, t := range targets {
		for range *warm {
			n, err := t.call()
			if err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			sizes[i] = n
		}
	}
	lat := make([][]time.Duration, len(targets))
	for range *runs {
		for i, t := range targets {
			start := time.Now()
			if _, err := t.call(); err != nil {
				return fmt.Errorf("%s: %w", t.name, err)
			}
			lat[i] = append(lat[i], time.Since(start))
		}
	}
	fmt.Printf("one %s call at a time, %d interleaved calls per target\n", *tool, *runs)
	for i, t := range targets {
		l := slices.Clone(lat[i])
		slices.Sort(l)
		fmt.Printf("%-10s p50 %7.1f ms  min %7.1f ms  max %7.1f ms  response %d bytes\n", t.name, ms(l[len(l)/2]), ms(l[0]), ms(l[len(l)-1]), sizes[i])
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

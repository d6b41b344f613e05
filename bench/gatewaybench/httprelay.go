package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// httpRelayMain serves streamable HTTP in front of one stdio server with
// the least an HTTP gateway must do: read each POST, give its request an
// id of the pipe's own, write it to the server, hand the response back
// under the client's id, and answer initialize from the server's first
// answer. Nothing else: no sessions, no limits, no engine, no
// server-to-client messages (they are dropped). It is the floor of any
// HTTP gateway over a stdio server, as relay is of a stdio one.
func httpRelayMain(args []string) error {
	fs := flag.NewFlagSet("http-relay", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve /mcp on")
	_ = fs.Parse(args)
	if fs.NArg() == 0 {
		return errors.New("http-relay: a command is required")
	}
	r, err := startHTTPRelay(fs.Args())
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Printf("http-relay: MCP at http://%s/mcp\n", ln.Addr())
	return http.Serve(ln, r)
}

// httpRelay is httpRelayMain's server.
type httpRelay struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	writeMu sync.Mutex
	next    atomic.Int64
	mu      sync.Mutex
	waiting map[int64]chan []byte
	gone    error  // set when the server's stdout ends; calls then fail
	init    []byte // the server's initialize result
}

func startHTTPRelay(command []string) (*httpRelay, error) {
	cmd, in, out, err := startPiped(command)
	if err != nil {
		return nil, err
	}
	r := &httpRelay{cmd: cmd, in: in, waiting: map[int64]chan []byte{}}
	go r.read(bufio.NewReaderSize(out, 64<<10))
	res, err := r.call([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + initParams + `}`))
	if err == nil {
		r.init = []byte(gjson.GetBytes(res, "result").Raw)
		_, err = io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	}
	if err != nil {
		r.close()
		return nil, fmt.Errorf("%s: initialize: %w", command[0], err)
	}
	return r, nil
}

// close ends the server (its stdin closed) and waits for it.
func (r *httpRelay) close() {
	r.in.Close()
	_ = r.cmd.Wait()
}

// read hands each response line to the call waiting for its id.
func (r *httpRelay) read(br *bufio.Reader) {
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			r.mu.Lock()
			r.gone = fmt.Errorf("the server's stdout ended: %w", err)
			for id, ch := range r.waiting {
				close(ch)
				delete(r.waiting, id)
			}
			r.mu.Unlock()
			return
		}
		id := gjson.GetBytes(line, "id")
		if id.Type != gjson.Number || gjson.GetBytes(line, "method").Exists() {
			continue // a notification or a server-to-client request
		}
		r.mu.Lock()
		ch := r.waiting[id.Int()]
		delete(r.waiting, id.Int())
		r.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
}

// call sends msg under an id of the pipe's own and returns the response.
func (r *httpRelay) call(msg []byte) ([]byte, error) {
	id := r.next.Add(1)
	msg, err := sjson.SetBytes(msg, "id", id)
	if err != nil {
		return nil, err
	}
	ch := make(chan []byte, 1)
	r.mu.Lock()
	if r.gone != nil {
		r.mu.Unlock()
		return nil, r.gone
	}
	r.waiting[id] = ch
	r.mu.Unlock()
	r.writeMu.Lock()
	_, err = r.in.Write(append(msg, '\n'))
	r.writeMu.Unlock()
	if err != nil {
		return nil, err
	}
	resp, ok := <-ch
	if !ok {
		r.mu.Lock()
		defer r.mu.Unlock()
		return nil, r.gone
	}
	return resp, nil
}

func (r *httpRelay) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := gjson.GetBytes(body, "id")
	if !id.Exists() {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	var resp []byte
	if gjson.GetBytes(body, "method").Str == "initialize" {
		resp = []byte(`{"jsonrpc":"2.0","id":` + id.Raw + `,"result":` + string(r.init) + `}`)
		w.Header().Set("Mcp-Session-Id", "relay")
	} else if resp, err = r.call(body); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	} else if resp, err = sjson.SetRawBytes(resp, "id", []byte(id.Raw)); err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(bytes.TrimSpace(resp))
}

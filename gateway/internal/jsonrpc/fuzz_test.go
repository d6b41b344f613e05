package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzReadLineParse feeds any bytes to the stdio reader as the gateway
// reads a peer (ReadLine under a size limit, then Parse each line): the
// lines it returns, joined, are the input (an over-long line's head is a
// prefix of it), no line holds more than the limit, and Parse either
// returns a message that is a request, notification or response, or an
// error (with any id it recovered).
func FuzzReadLineParse(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`+"\n"), int64(1024))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","result":{}}`+"\n"+`{"jsonrpc":"2.0","method":"notifications/x"}`), int64(64))
	f.Add([]byte(`{"id":7,"method":`+"\n"+`[1,2]`+"\n"+`{"error":{"code":"x"},"id":3}`+"\n"), int64(16))
	f.Add([]byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"a":"`+string(bytes.Repeat([]byte("x"), 300))+`"}}`+"\n"), int64(40))
	f.Fuzz(func(t *testing.T, in []byte, limit int64) {
		if limit <= 0 || limit > 1<<20 {
			limit = 1 + (limit&0xfff+0xfff)%0xfff
		}
		br := bufio.NewReaderSize(bytes.NewReader(in), 16) // small: long lines take the slow path
		rest := in
		for {
			line, over, err := ReadLine(br, limit)
			if over {
				if len(line) > LineHeadBytes || !bytes.HasPrefix(rest, line) {
					t.Fatalf("over-long line's head %q is not a prefix of the input left %q", line, rest)
				}
				i := bytes.IndexByte(rest, '\n')
				if i < 0 {
					rest = nil
				} else {
					rest = rest[i+1:]
				}
			} else {
				if int64(len(line)) > limit {
					t.Fatalf("a line of %d bytes over the limit %d", len(line), limit)
				}
				if !bytes.HasPrefix(rest, line) {
					t.Fatalf("line %q is not the next input %q", line, rest)
				}
				rest = rest[len(line):]
				checkParse(t, line)
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("reader error %v", err)
				}
				break
			}
		}
		if len(rest) != 0 {
			t.Fatalf("input left unread: %q", rest)
		}
	})
}

func checkParse(t *testing.T, line []byte) {
	t.Helper()
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	m, err := Parse(line)
	if err != nil {
		if m != nil && m.ID != nil && !json.Valid(m.ID) {
			t.Fatalf("Parse(%q) recovered the id %q, not JSON", line, m.ID)
		}
		return
	}
	kinds := 0
	for _, k := range []bool{m.IsRequest(), m.IsNotification(), m.IsResponse()} {
		if k {
			kinds++
		}
	}
	if kinds != 1 {
		t.Fatalf("Parse(%q) = %+v: request %v, notification %v, response %v", line, m, m.IsRequest(), m.IsNotification(), m.IsResponse())
	}
	if m.ID != nil && !json.Valid(m.ID) {
		t.Fatalf("Parse(%q): id %q is not JSON", line, m.ID)
	}
	if m.Params != nil && !json.Valid(m.Params) {
		t.Fatalf("Parse(%q): params %q are not JSON", line, m.Params)
	}
	// What the gateway answers such a message with is JSON too.
	if m.ID != nil {
		if b := EncodeError(m.ID, errors.New("x")); !json.Valid(b) {
			t.Fatalf("EncodeError for id %q: %q", m.ID, b)
		}
	}
}

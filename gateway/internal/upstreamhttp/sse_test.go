package upstreamhttp

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestEventReader(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		want   []event
		lastID string
		retry  time.Duration
	}{
		{"one event", "event: message\ndata: {\"a\":1}\n\n", []event{{"message", []byte(`{"a":1}`)}}, "", 0},
		{"no event name is message", "data: x\n\n", []event{{"message", []byte("x")}}, "", 0},
		{"CRLF", "event: endpoint\r\ndata: /m?s=1\r\n\r\n", []event{{"endpoint", []byte("/m?s=1")}}, "", 0},
		{"lone CR", "data: a\rdata: b\r\rdata: c\r\r", []event{{"message", []byte("a\nb")}, {"message", []byte("c")}}, "", 0},
		{"multi-line data", "data: a\ndata:b\ndata\n\n", []event{{"message", []byte("a\nb\n")}}, "", 0},
		{"comments and unknown fields", ": keep-alive\nfoo: bar\ndata: x\n\n", []event{{"message", []byte("x")}}, "", 0},
		{"an event without data is not returned but its id counts", "id: 7\nretry: 250\n\ndata: y\n\n", []event{{"message", []byte("y")}}, "7", 250 * time.Millisecond},
		{"a bad retry is ignored", "retry: 1s\ndata: y\n\n", []event{{"message", []byte("y")}}, "", 0},
		{"an unfinished event at the end is dispatched", "data: {\"z\":2}", []event{{"message", []byte(`{"z":2}`)}}, "", 0},
		{"two events", "id: 1\ndata: a\n\nid: 2\nevent: e\ndata: b\n\n", []event{{"message", []byte("a")}, {"e", []byte("b")}}, "2", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newEventReader(strings.NewReader(tt.in), testLimits)
			var got []event
			for {
				ev, err := r.next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("events %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i].name != tt.want[i].name || string(got[i].data) != string(tt.want[i].data) {
					t.Errorf("event %d = %s %q, want %s %q", i, got[i].name, got[i].data, tt.want[i].name, tt.want[i].data)
				}
			}
			if r.lastID != tt.lastID {
				t.Errorf("last event ID %q, want %q", r.lastID, tt.lastID)
			}
			if r.retry != tt.retry {
				t.Errorf("retry %s, want %s", r.retry, tt.retry)
			}
		})
	}
}

// A data line larger than the reader's buffer arrives whole.
func TestEventReaderLargeData(t *testing.T) {
	big := strings.Repeat("A", 3*sseReadBuffer+17)
	r := newEventReader(strings.NewReader("data: "+big+"\n\n"), testLimits)
	ev, err := r.next()
	if err != nil {
		t.Fatal(err)
	}
	if string(ev.data) != big {
		t.Fatalf("data of %d bytes, want %d", len(ev.data), len(big))
	}
}

package subscriptions

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// A stream's notifications queue for its own writer: a full queue ends
// the stream instead of waiting, and the writer sends what was queued,
// in order, before it stops.
func TestListenerQueue(t *testing.T) {
	fulls := 0
	l := &listener{id: json.RawMessage(`9`), queue: make(chan []byte, 2), full: func() { fulls++ }}
	l.Notify("notifications/tools/list_changed", json.RawMessage(`{"n":-1}`)) // before the ack: dropped
	l.open.Store(true)
	for i := range 3 {
		l.Notify("notifications/tools/list_changed", json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)))
	}
	if fulls != 1 {
		t.Fatalf("a third notification on a queue of two: full called %d times", fulls)
	}
	var got []string
	stop, written := make(chan struct{}), make(chan struct{})
	close(stop)
	l.write(func(b []byte) {
		got = append(got, gjson.GetBytes(b, "params.n").Raw+":"+gjson.GetBytes(b, `params._meta.io\.modelcontextprotocol/subscriptionId`).Raw)
	}, stop, written)
	<-written
	if strings.Join(got, ",") != "0:9,1:9" {
		t.Errorf("written: %v", got)
	}
}

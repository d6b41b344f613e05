package upstream

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/tidwall/gjson"
)

// MaxPages bounds every pagination loop over an upstream.
const MaxPages = 1000

// declared is what the server declared of itself: its initialize (or
// server/discover) result, the capabilities and revision in it, and its
// tool list. It stays while the server is down, until a reconnect's
// handshake replaces it.
type declared struct {
	mu       sync.RWMutex
	result   json.RawMessage // the initialize or server/discover result
	caps     gjson.Result    // its capabilities
	protocol string
	tools    []json.RawMessage // raw tool definitions, in the server's order
}

// set records a handshake's result and the revision it agreed.
func (d *declared) set(result json.RawMessage, protocol string) {
	d.mu.Lock()
	d.result, d.caps, d.protocol = result, gjson.GetBytes(result, "capabilities"), protocol
	d.mu.Unlock()
}

// loadTools fetches every page of tools/list through call.
func (d *declared) loadTools(ctx context.Context, call func(context.Context, string, json.RawMessage) (json.RawMessage, error)) error {
	if !d.capability("tools") {
		d.setTools(nil)
		return nil
	}
	var all []json.RawMessage
	cursor := ""
	for page := 0; page < MaxPages; page++ {
		params := json.RawMessage(nil)
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		res, err := call(ctx, "tools/list", params)
		if err != nil {
			return err
		}
		gjson.GetBytes(res, "tools").ForEach(func(_, v gjson.Result) bool {
			all = append(all, json.RawMessage(v.Raw))
			return true
		})
		cursor = gjson.GetBytes(res, "nextCursor").String()
		if cursor == "" {
			break
		}
	}
	d.setTools(all)
	return nil
}

func (d *declared) setTools(tools []json.RawMessage) {
	d.mu.Lock()
	d.tools = tools
	d.mu.Unlock()
}

func (d *declared) toolDefs() []json.RawMessage {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.tools
}

// tool is the definition of the tool named name, nil when the server
// lists none.
func (d *declared) tool(name string) json.RawMessage {
	for _, def := range d.toolDefs() {
		if gjson.GetBytes(def, "name").String() == name {
			return def
		}
	}
	return nil
}

// capability reports whether the server declared capability name.
func (d *declared) capability(name string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.caps.Get(name).Exists()
}

// capabilityFlag reports whether capability name declared flag true
// (tools.listChanged).
func (d *declared) capabilityFlag(name, flag string) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.caps.Get(name + "." + flag).Bool()
}

// instructions are the instructions of the server's initialize result.
func (d *declared) instructions() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return gjson.GetBytes(d.result, "instructions").String()
}

// status is what Status reports of the declaration.
func (d *declared) status() (protocol string, tools int) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.protocol, len(d.tools)
}

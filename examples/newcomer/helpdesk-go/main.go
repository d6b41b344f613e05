// Command ticket_plugin is the newcomer walkthrough's plugin after its
// edit (examples/newcomer/README.md): an mcpx custom transformer for a
// helpdesk server's get_ticket. It moves each attachment into the artifact
// store under the attachment's own file name, and cuts the ticket's
// history to its last 5 entries (mcpx stores the full history it
// replaces).
//
// It replaces the main.go that "mcpx plugin new --lang go" writes; build it
// with the scaffold's ./build.sh.
package main

import (
	"strconv"
	"strings"

	guest "github.com/mcpx-dev/mcpx/sdk/wasm-guest/go"
)

// keepHistory is how many history entries stay in the result.
const keepHistory = 5

func init() { guest.Register(transform) }

func main() {}

func transform(req *guest.Request) (*guest.Response, error) {
	var out guest.Response
	if req.Tool() != "get_ticket" {
		return &out, nil // leave every other tool alone
	}
	payload := req.Payload()
	for _, c := range req.Candidates() {
		// attachments.<n>.data: base64 of a file.
		n, ok := attachmentIndex(c.Path)
		if c.Target != guest.Payload || !ok || !c.IsBase64() {
			continue
		}
		at := "attachments." + strconv.Itoa(n)
		name := payload.Get(at + ".name").String()
		out.Add(guest.Rewrite{
			Path:     c.Path,
			Action:   guest.Artifact,
			Encoding: guest.Base64,
			MIME:     payload.Get(at + ".mime_type").String(),
			Filename: name,
			Summary:  "Attachment " + guest.QuoteName(name),
		})
	}
	// The history's entries are short, so the skeleton holds them whole.
	if h := payload.Get("history").Array(); len(h) > keepHistory {
		last := []byte{'['}
		for i, e := range h[len(h)-keepHistory:] {
			if i > 0 {
				last = append(last, ',')
			}
			last = append(last, e.Raw...)
		}
		last = append(last, ']')
		out.Add(guest.Rewrite{Path: "history", Action: guest.Replace, Value: last})
	}
	return &out, nil
}

// attachmentIndex parses "attachments.N.data".
func attachmentIndex(path string) (int, bool) {
	rest, ok := strings.CutPrefix(path, "attachments.")
	if !ok {
		return 0, false
	}
	n, ok := strings.CutSuffix(rest, ".data")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(n)
	return i, err == nil
}

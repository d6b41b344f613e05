package wasm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/mcpx-dev/mcpx/engine/layer"
	"github.com/mcpx-dev/mcpx/internal/b64"
	"github.com/mcpx-dev/mcpx/internal/jsonstr"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
	"github.com/mcpx-dev/mcpx/internal/magic"
)

// ABIVersion is the version of the guest contract this host speaks
// (sdk/wasm-guest/ABI.md).
const ABIVersion = 1

// Mode says what a plugin may answer.
type Mode string

const (
	// ModeRewrites (presets): the response is {"rewrites": [...]}.
	ModeRewrites Mode = "rewrites"
	// ModeCustom (custom transformers): the response is {"rewrites": [...]}
	// or {"payload": <JSON>}, a replacement for the whole payload.
	ModeCustom Mode = "custom"
)

// headBytes is how many bytes of a long string's text a stub carries.
const headBytes = 64

// stubKey marks a long-string stub in a skeleton.
const stubKey = "$mcpx"

// span is a long string literal to replace by a stub in a buffer.
type span struct {
	off, end int
	carrier  bool // a carrier of the payload: {"$mcpx":"payload"}
}

// BuildRequest returns the JSON request a plugin receives for d (ABI v1):
// the call, the candidate paths of the long strings, the plugin's config,
// and the payload and result skeletons, in which long strings are
// {"$mcpx":"long_string","len":N,"head":"...","mime":"...","encoding":"..."}
// and, in the result, each carrier of the payload is {"$mcpx":"payload"}.
func BuildRequest(d *layer.Doc, mode Mode, config json.RawMessage, longString int) []byte {
	strs := d.Strings(longString)
	carriers := d.Carriers()
	// A rough size: the skeletons are small, the rest is what it is.
	b := make([]byte, 0, 1024+len(d.Call.Arguments)+len(config))
	b = append(b, `{"abi":`...)
	b = strconv.AppendInt(b, ABIVersion, 10)
	b = append(b, `,"mode":`...)
	b = jsonstr.AppendString(b, string(mode))
	b = append(b, `,"server":`...)
	b = jsonstr.AppendString(b, d.Call.Server)
	b = append(b, `,"tool":`...)
	b = jsonstr.AppendString(b, d.Call.Tool)
	b = append(b, `,"arguments":`...)
	b = appendRaw(b, d.Call.Arguments)

	// The small fields come first and the skeletons last, so that a guest
	// that scans the request (gjson, a streaming parser) for the tool, the
	// candidates or its config stops early.
	var cands []candidate
	var payload, result []byte
	if len(carriers) == 0 {
		payload = []byte("null")
	} else {
		c := carriers[0]
		var spans []span
		for _, s := range strs {
			if s.Carrier == 0 {
				spans = append(spans, span{off: s.Off, end: s.End})
				if addressable(s.Path, c.Payload, s.Off) {
					cands = append(cands, candidate{target: layer.TargetPayload, path: s.Path, buf: c.Payload, span: span{off: s.Off, end: s.End}})
				}
			}
		}
		payload = appendSkeleton(make([]byte, 0, skeletonSize(len(c.Payload), spans)), c.Payload, spans)
	}
	if !d.IsMCP() {
		result = []byte("null")
	} else {
		var env []span
		for _, s := range strs {
			if s.Carrier == -1 {
				env = append(env, span{off: s.Off, end: s.End})
				if addressable(s.Path, d.Raw, s.Off) {
					cands = append(cands, candidate{target: layer.TargetResult, path: s.Path, buf: d.Raw, span: span{off: s.Off, end: s.End}})
				}
			}
		}
		for _, c := range carriers {
			// Each carrier of the payload is a stub in the result: the
			// guest reads the payload once, under "payload".
			env = append(env, span{off: c.Off, end: c.End, carrier: true})
		}
		sort.Slice(env, func(i, j int) bool { return env[i].off < env[j].off })
		result = appendSkeleton(make([]byte, 0, 256), d.Raw, env)
	}
	b = append(b, `,"candidates":[`...)
	for i, c := range cands {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"target":`...)
		b = jsonstr.AppendString(b, string(c.target))
		b = append(b, `,"path":`...)
		b = jsonstr.AppendString(b, c.path)
		b = append(b, ',')
		b = appendStubFields(b, c.buf, c.span)
		b = append(b, '}')
	}
	b = append(b, `],"config":`...)
	if len(bytes.TrimSpace(config)) == 0 {
		b = append(b, "{}"...)
	} else {
		b = append(b, config...)
	}
	b = append(b, `,"payload":`...)
	b = append(b, payload...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// addressable reports whether a rewrite path reaches the string at off: a
// key that is empty makes no path (the string stays a stub, but is not
// offered as a candidate), and "" is the root only.
func addressable(path string, buf []byte, off int) bool {
	if path == "" {
		return len(bytes.TrimLeft(buf[:off], " \t\r\n")) == 0
	}
	_, err := jsonwalk.ParsePath(path)
	return err == nil
}

type candidate struct {
	target layer.Target
	path   string
	buf    []byte
	span   span
}

func appendRaw(b, raw []byte) []byte {
	if len(bytes.TrimSpace(raw)) == 0 {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// skeletonSize is about what appendSkeleton writes for a buffer of n
// bytes: what the spans leave, and a stub for each (a 10 MiB string is
// not worth a 2.5 MiB guess).
func skeletonSize(n int, spans []span) int {
	for _, s := range spans {
		n -= s.end - s.off - 256
	}
	return max(n, 64)
}

// appendSkeleton appends buf with each span (sorted, disjoint) replaced by a
// stub.
func appendSkeleton(b, buf []byte, spans []span) []byte {
	last := 0
	for _, s := range spans {
		if s.off < last {
			continue // nested in a replaced span; cannot happen for strings
		}
		b = append(b, buf[last:s.off]...)
		if s.carrier {
			b = append(b, `{"`+stubKey+`":"payload"}`...)
		} else {
			b = append(b, `{"`+stubKey+`":"long_string",`...)
			b = appendStubFields(b, buf, s)
			b = append(b, '}')
		}
		last = s.end
	}
	return append(b, buf[last:]...)
}

// appendStubFields appends "len":N,"head":"...","mime":"...","encoding":"..."
// for the string literal at s in buf.
func appendStubFields(b, buf []byte, s span) []byte {
	body := buf[s.off+1 : s.end-1]
	b = append(b, `"len":`...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, `,"head":`...)
	b = jsonstr.AppendString(b, head(body))
	m, enc := sniff(body)
	b = append(b, `,"mime":`...)
	b = jsonstr.AppendString(b, m)
	b = append(b, `,"encoding":`...)
	return jsonstr.AppendString(b, enc)
}

// head returns the first headBytes bytes of a literal's text, cut at a
// character boundary.
func head(body []byte) string {
	cut := min(len(body), 2*headBytes)
	var text []byte
	for ; cut > 0; cut-- {
		// A cut inside an escape fails to unescape: back off.
		t, err := jsonstr.Unescape(nil, body[:cut])
		if err == nil {
			text = t
			break
		}
	}
	if len(text) > headBytes {
		text = text[:headBytes]
	}
	for len(text) > 0 && !utf8.Valid(text) {
		text = text[:len(text)-1]
	}
	return string(text)
}

// sniff names the media type of a long string and how it is encoded:
// base64 whose first bytes carry a known signature gives that file type,
// other base64 text/plain (when it decodes to text) or
// application/octet-stream; plain text is application/json when it starts
// like JSON, else text/plain.
func sniff(body []byte) (mime, encoding string) {
	if b64.Looks(body, 16) {
		if h, err := b64.DecodeHead(body, magic.HeadSize); err == nil && len(h) > 0 {
			if t, ok := magic.Detect(h); ok {
				return t.MIME, "base64"
			}
			if utf8.Valid(trimPartialRune(h)) && looksText(h) {
				return "text/plain", "base64"
			}
			return "application/octet-stream", "base64"
		}
	}
	if t := bytes.TrimLeft(body, " \t"); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		return "application/json", "text"
	}
	return "text/plain", "text"
}

// trimPartialRune drops a UTF-8 sequence cut at the end of a head.
func trimPartialRune(h []byte) []byte {
	for i := 0; i < 3 && len(h) > 0 && !utf8.Valid(h); i++ {
		h = h[:len(h)-1]
	}
	return h
}

// looksText reports whether decoded bytes are mostly printable text.
func looksText(h []byte) bool {
	ctl := 0
	for _, c := range h {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' {
			ctl++
		}
	}
	return ctl*20 < len(h)
}

// response is the JSON a plugin answers.
type response struct {
	Rewrites []layer.Rewrite `json:"rewrites"`
	Payload  json.RawMessage `json:"payload"`
}

// ParseResponse decodes and checks a plugin's response. In ModeCustom a
// payload becomes one ActionReplace rewrite at the payload root, so the
// engine stores the replaced original and every carrier gets the new one.
func ParseResponse(out []byte, mode Mode) ([]layer.Rewrite, error) {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var r response
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadResponse, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the response object", ErrBadResponse)
	}
	if len(r.Payload) > 0 && !bytes.Equal(bytes.TrimSpace(r.Payload), []byte("null")) {
		if mode != ModeCustom {
			return nil, fmt.Errorf("%w: a payload replacement needs custom mode (presets return rewrites)", ErrBadResponse)
		}
		if len(r.Rewrites) > 0 {
			return nil, fmt.Errorf("%w: both payload and rewrites (answer one)", ErrBadResponse)
		}
		return []layer.Rewrite{{Path: "", Action: layer.ActionReplace, Value: r.Payload}}, nil
	}
	for i := range r.Rewrites {
		if err := checkRewrite(&r.Rewrites[i]); err != nil {
			return nil, fmt.Errorf("%w: rewrites[%d]: %w", ErrBadResponse, i, err)
		}
	}
	return r.Rewrites, nil
}

// checkRewrite rejects what the engine would reject, so a bad response fails
// the whole layer rather than leaving it half applied.
func checkRewrite(rw *layer.Rewrite) error {
	if _, err := jsonwalk.ParsePath(rw.Path); err != nil {
		return err
	}
	switch rw.Target {
	case "", layer.TargetPayload, layer.TargetResult:
	default:
		return fmt.Errorf("target %q: want payload or result", rw.Target)
	}
	switch rw.Action {
	case layer.ActionArtifact, layer.ActionTruncate, layer.ActionDrop:
	case layer.ActionReplace:
		if !json.Valid(rw.Value) {
			return fmt.Errorf("path %q: replace needs a JSON value", rw.Path)
		}
	case "":
		return fmt.Errorf("path %q: action is required", rw.Path)
	default:
		return fmt.Errorf("path %q: action %q: want artifact, truncate, replace or drop", rw.Path, rw.Action)
	}
	switch rw.Encoding {
	case "", layer.EncodingAuto, layer.EncodingBase64, layer.EncodingText, layer.EncodingJSON:
	default:
		return fmt.Errorf("path %q: encoding %q: want auto, base64, text or json", rw.Path, rw.Encoding)
	}
	switch rw.Form {
	case "", layer.FormValue, layer.FormText, layer.FormBlock:
	default:
		return fmt.Errorf("path %q: form %q: want value, text or block", rw.Path, rw.Form)
	}
	if rw.Keep < 0 || rw.MinSize < 0 {
		return fmt.Errorf("path %q: keep and min_size must not be negative", rw.Path)
	}
	if rw.Path == "" && rw.Action != layer.ActionReplace && rw.Action != layer.ActionArtifact && rw.Action != layer.ActionTruncate {
		return fmt.Errorf("cannot %s the payload root", rw.Action)
	}
	return nil
}

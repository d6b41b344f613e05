// Package guest is the Go SDK for mcpx WASM plugins (ABI v1,
// sdk/wasm-guest/ABI.md). A plugin is a main package that registers one
// function in init:
//
//	func init() { guest.Register(transform) }
//
//	func transform(req *guest.Request) (*guest.Response, error) {
//		var out guest.Response
//		for _, c := range req.Candidates() {
//			if c.MIME == "application/pdf" {
//				out.Add(guest.Rewrite{Path: c.Path, Target: c.Target, Action: guest.Artifact, Encoding: guest.Base64})
//			}
//		}
//		return &out, nil
//	}
//
//	func main() {}
//
// The same source builds with the standard toolchain and with TinyGo:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//	tinygo build -target=wasip1 -buildmode=c-shared -no-debug -scheduler=none -ldflags='-X github.com/tidwall/gjson.disableModifiers=true' -o plugin.wasm .
//
// The SDK keeps to what both compilers handle well: no encoding/json (the
// response is written by hand, requests are read with gjson), no
// goroutines, and all setup in init. Outside wasip1 the package builds too
// (the exports and host imports are left out), so a plugin's logic can be
// tested with a plain "go test" through Handle.
package guest

import (
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// ABIVersion is the version of the contract this SDK implements.
const ABIVersion = 1

// Modes of a request.
const (
	// ModeRewrites: the host wants rewrites only (presets).
	ModeRewrites = "rewrites"
	// ModeCustom: the host also accepts a replacement payload (custom
	// transformers).
	ModeCustom = "custom"
)

// Actions of the rewrite language.
const (
	Artifact = "artifact" // store the value, put a ref and summary in its place
	Truncate = "truncate" // store the value, keep a prefix in place
	Replace  = "replace"  // put Value in place
	Drop     = "drop"     // remove the value (stored first when large)
)

// Encodings of a value for Artifact and Truncate.
const (
	Auto   = "auto"   // a string's text, any other value's JSON
	Base64 = "base64" // decode the string as base64
	Text   = "text"   // the string's unescaped text
	JSON   = "json"   // the value's JSON text
)

// Targets of a rewrite's path.
const (
	Payload = "payload" // the tool's payload (every carrier of it); the default
	Result  = "result"  // the whole CallToolResult, e.g. "content.1"
)

// Forms of an artifact's replacement.
const (
	FormValue = "value" // {"artifact": ref, "summary": "..."}; the default
	FormText  = "text"  // that object as a JSON string
	FormBlock = "block" // a content block becomes text + resource_link blocks
)

// Request is what the host sends: the call and a skeleton of its result in
// which long strings are stubs. It is valid only during the call.
type Request struct {
	raw []byte
}

// NewRequest wraps the JSON of a request, for tests.
func NewRequest(raw []byte) *Request { return &Request{raw: raw} }

// Raw is the request's JSON.
func (r *Request) Raw() []byte { return r.raw }

// Get reads a gjson path of the request ("payload.data", "arguments.id").
func (r *Request) Get(path string) gjson.Result { return gjson.GetBytes(r.raw, path) }

// Server is the upstream server's name.
func (r *Request) Server() string { return r.Get("server").String() }

// Tool is the tool's name.
func (r *Request) Tool() string { return r.Get("tool").String() }

// Mode is ModeRewrites or ModeCustom.
func (r *Request) Mode() string { return r.Get("mode").String() }

// Arguments are the call's arguments (may not exist).
func (r *Request) Arguments() gjson.Result { return r.Get("arguments") }

// Payload is the skeleton of the tool's payload: its JSON with every long
// string replaced by a stub (see Long). Null when the result has none.
func (r *Request) Payload() gjson.Result { return r.Get("payload") }

// Result is the skeleton of the whole CallToolResult; null when the result
// is not an MCP result (then Payload is all of it).
func (r *Request) Result() gjson.Result { return r.Get("result") }

// Config is the plugin's configuration, an object.
func (r *Request) Config() gjson.Result { return r.Get("config") }

// Candidate is a long string of the result: where it is and what it looks
// like.
type Candidate struct {
	// Target is Payload or Result; Path is relative to it.
	Target, Path string
	// Len is the string's length in bytes as it sits in the JSON.
	Len int
	// Head is the start of its text (64 bytes at most).
	Head string
	// MIME is the type detected from its first bytes: a file type for
	// base64 with a known signature, text/plain for base64 of text,
	// application/octet-stream for other base64; application/json or
	// text/plain for plain text.
	MIME string
	// Encoding is "base64" when the string decodes as base64 (use
	// Encoding: Base64 to store the bytes), else "text".
	Encoding string
}

// IsBase64 reports whether the string is base64.
func (c Candidate) IsBase64() bool { return c.Encoding == Base64 }

// IsBinary reports whether the string is base64 of something other than
// text.
func (c Candidate) IsBinary() bool { return c.Encoding == Base64 && c.MIME != "text/plain" }

// Candidates lists the long strings, in document order.
func (r *Request) Candidates() []Candidate {
	var out []Candidate
	r.Get("candidates").ForEach(func(_, v gjson.Result) bool {
		out = append(out, Candidate{
			Target: v.Get("target").String(),
			Path:   v.Get("path").String(),
			Len:    int(v.Get("len").Int()),
			Head:   v.Get("head").String(),
			MIME:   v.Get("mime").String(),

			Encoding: v.Get("encoding").String(),
		})
		return true
	})
	return out
}

// Long reports whether v is a long-string stub of a skeleton and returns
// what it says (Target and Path are empty).
func Long(v gjson.Result) (Candidate, bool) {
	if !v.IsObject() || v.Get("\\$mcpx").String() != "long_string" {
		return Candidate{}, false
	}
	return Candidate{Len: int(v.Get("len").Int()), Head: v.Get("head").String(), MIME: v.Get("mime").String(), Encoding: v.Get("encoding").String()}, true
}

// Rewrite is one instruction of the engine's rewrite language; the field
// meanings are those of the engine's layer.Rewrite (ABI.md lists them).
type Rewrite struct {
	Path     string
	Target   string // Payload (default) or Result
	Action   string // Artifact, Truncate, Replace or Drop
	Encoding string // Auto (default), Base64, Text or JSON
	Verify   bool   // with Base64: refuse bytes without a known signature
	MIME     string // artifact media type; detected when empty
	Filename string // template, like Summary
	Summary  string // template: {size}, {id}, {mime}, {.field}, ...
	Keep     int
	KeepLast int    // with Truncate: also keep the last KeepLast characters or items
	Form     string // FormValue (default), FormText or FormBlock
	Value    []byte // JSON for Replace
	Splat    bool
	MinSize  int
	Meta     map[string]string
}

// QuoteName puts a name in single quotes for a summary or filename template,
// turning braces into parentheses so that a name such as "Q{3}" cannot be
// read as a placeholder.
func QuoteName(s string) string {
	return "'" + strings.NewReplacer("{", "(", "}", ")").Replace(s) + "'"
}

// InBlock turns a rewrite of a content block's field (content.N.data,
// content.N.text, content.N.resource.blob) into one of the block itself in
// block form, so the block becomes a text block with the summary plus a
// resource_link to the artifact. Other paths are left as they are.
func (rw *Rewrite) InBlock() {
	parts := strings.SplitN(rw.Path, ".", 3)
	if len(parts) < 3 {
		return
	}
	rw.Path = parts[0] + "." + parts[1]
	rw.Form = FormBlock
}

// Response is a plugin's answer: rewrites, or in custom mode a payload.
type Response struct {
	Rewrites []Rewrite
	// Payload, when set (custom mode only), is the JSON that replaces the
	// whole payload; the host stores the original.
	Payload []byte
}

// Add appends rewrites.
func (r *Response) Add(rws ...Rewrite) { r.Rewrites = append(r.Rewrites, rws...) }

// AppendJSON appends the response's JSON to b.
func (r *Response) AppendJSON(b []byte) []byte {
	if r == nil {
		return append(b, `{"rewrites":[]}`...)
	}
	if r.Payload != nil {
		b = append(b, `{"payload":`...)
		b = append(b, r.Payload...)
		return append(b, '}')
	}
	b = append(b, `{"rewrites":[`...)
	for i := range r.Rewrites {
		if i > 0 {
			b = append(b, ',')
		}
		b = r.Rewrites[i].appendJSON(b)
	}
	return append(b, "]}"...)
}

func (w *Rewrite) appendJSON(b []byte) []byte {
	b = append(b, `{"path":`...)
	b = AppendString(b, w.Path)
	b = append(b, `,"action":`...)
	b = AppendString(b, w.Action)
	str := func(k, v string) {
		if v != "" {
			b = append(b, ",\""+k+"\":"...)
			b = AppendString(b, v)
		}
	}
	num := func(k string, v int) {
		if v != 0 {
			b = append(b, ",\""+k+"\":"...)
			b = strconv.AppendInt(b, int64(v), 10)
		}
	}
	str("target", w.Target)
	str("encoding", w.Encoding)
	if w.Verify {
		b = append(b, `,"verify":true`...)
	}
	str("mime", w.MIME)
	str("filename", w.Filename)
	str("summary", w.Summary)
	num("keep", w.Keep)
	num("keep_last", w.KeepLast)
	str("form", w.Form)
	if w.Value != nil {
		b = append(b, `,"value":`...)
		b = append(b, w.Value...)
	}
	if w.Splat {
		b = append(b, `,"splat":true`...)
	}
	num("min_size", w.MinSize)
	if len(w.Meta) > 0 {
		b = append(b, `,"meta":{`...)
		first := true
		for _, k := range sortedKeys(w.Meta) {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = AppendString(b, k)
			b = append(b, ':')
			b = AppendString(b, w.Meta[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// sortedKeys sorts by insertion into a slice: small maps, no sort package.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		i := len(keys)
		keys = append(keys, k)
		for i > 0 && keys[i-1] > k {
			keys[i] = keys[i-1]
			i--
		}
		keys[i] = k
	}
	return keys
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string literal; invalid UTF-8 becomes
// U+FFFD.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x80 {
			i++
			continue
		}
		if c < 0x80 {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		n := runeLen(s[i:])
		if n == 0 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += n
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Quote returns s as a JSON string literal.
func Quote(s string) string { return string(AppendString(nil, s)) }

// runeLen is the length of the valid UTF-8 sequence at the start of s, or 0.
func runeLen(s string) int {
	c := s[0]
	var n int
	var lo, hi byte = 0x80, 0xbf
	switch {
	case c >= 0xc2 && c <= 0xdf:
		n = 2
	case c == 0xe0:
		n, lo = 3, 0xa0
	case c >= 0xe1 && c <= 0xec, c == 0xee, c == 0xef:
		n = 3
	case c == 0xed:
		n, hi = 3, 0x9f
	case c == 0xf0:
		n, lo = 4, 0x90
	case c >= 0xf1 && c <= 0xf3:
		n = 4
	case c == 0xf4:
		n, hi = 4, 0x8f
	default:
		return 0
	}
	if len(s) < n || s[1] < lo || s[1] > hi {
		return 0
	}
	for i := 2; i < n; i++ {
		if s[i] < 0x80 || s[i] > 0xbf {
			return 0
		}
	}
	return n
}

// Handler transforms one request.
type Handler func(*Request) (*Response, error)

var handler Handler

// Register sets the plugin's function. Call it once, from init.
func Register(h Handler) {
	if handler != nil {
		panic("guest: Register called twice")
	}
	handler = h
}

// Handle runs the registered function on the JSON of a request and returns
// the response's JSON, or an error message and true. The exports call it;
// tests may too.
func Handle(req []byte) (out []byte, isErr bool) {
	return handle(req, nil)
}

// handle is Handle writing the response into buf.
func handle(req, buf []byte) (out []byte, isErr bool) {
	if handler == nil {
		return []byte("guest: no function registered (call guest.Register in init)"), true
	}
	if v := gjson.GetBytes(req, "abi").Int(); v != ABIVersion {
		return []byte("guest: request ABI version " + strconv.FormatInt(v, 10) + ", this SDK speaks " + strconv.Itoa(ABIVersion)), true
	}
	resp, err := handler(&Request{raw: req})
	if err != nil {
		return []byte(err.Error()), true
	}
	if resp != nil && resp.Payload != nil && !gjson.ValidBytes(resp.Payload) {
		return []byte("guest: Response.Payload is not valid JSON"), true
	}
	if buf == nil {
		buf = make([]byte, 0, 256)
	}
	return resp.AppendJSON(buf), false
}

// Level is a log line's severity.
type Level uint32

// Log levels.
const (
	LevelTrace Level = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
)

// Log writes one line into the host's log, under the plugin's name. The
// host keeps 64 lines a call and 4 KiB a line.
func Log(level Level, msg string) { hostLog(level, msg) }

// GetValue returns the full JSON of a value of the payload, which the
// skeleton may show as a stub: path is a plain path (ABI.md), keys and
// decimal array indexes separated by "." with "\" escaping one byte
// ("items.0.data", "a\.b" for the key "a.b"), not a gjson path: no
// wildcards, queries, modifiers or pipes. A Candidate's Path is already
// one. "result:" + path reads the whole result ("result:content.1.data").
// The host bounds what one call may read (4 MiB by default); false when
// the value is missing, the path is not plain, or the read is over that
// budget.
func GetValue(path string) ([]byte, bool) { return hostGetValue(path) }

// GetConfig returns the JSON of a plain path (as for GetValue) in the
// plugin's config ("" for all of it); false when it is missing.
func GetConfig(key string) ([]byte, bool) { return hostGetConfig(key) }

package layer

import "encoding/json"

// Action is what a Rewrite does to the value at its path.
type Action string

// The actions of the rewrite language.
const (
	// ActionArtifact stores the value in the artifact store and puts
	// {"artifact": <ref>, "summary": "..."} in its place (see Form).
	ActionArtifact Action = "artifact"
	// ActionTruncate stores the whole value and keeps a prefix of it in
	// place: Keep characters of a string, Keep items of an array or Keep
	// members of an object, followed by a marker that names the artifact.
	ActionTruncate Action = "truncate"
	// ActionReplace puts Value in place of the value, creating the path when
	// it is missing (members of existing objects only: a path through a
	// string or past an array's end fails). A replaced value over 1 KiB is
	// stored first, with Filename and Summary, and the result references it
	// (see Result and "mcpx/stored" in _meta), so that nothing is lost.
	ActionReplace Action = "replace"
	// ActionDrop removes the value (its key, or its array element). A
	// dropped value over 1 KiB is stored and referenced as for replace.
	ActionDrop Action = "drop"
)

// Target says which document a Rewrite's path is relative to.
type Target string

const (
	// TargetPayload (the default) addresses the tool's payload: the path is
	// applied to every carrier of the payload (structuredContent, each
	// JSON-in-text block, or the raw document when it is not an MCP result).
	TargetPayload Target = "payload"
	// TargetResult addresses the whole result document, e.g.
	// "content.2" for the third content block of a CallToolResult.
	TargetResult Target = "result"
)

// Encoding says how the value's bytes are read for an artifact.
type Encoding string

const (
	// EncodingAuto stores a string's text and any other value's JSON.
	EncodingAuto Encoding = "auto"
	// EncodingBase64 decodes a string as base64 (any common shape: standard,
	// URL-safe, unpadded, with escaped line breaks or slashes, data: URIs).
	EncodingBase64 Encoding = "base64"
	// EncodingText stores a string's unescaped text.
	EncodingText Encoding = "text"
	// EncodingJSON stores the value's JSON text exactly as it appears.
	EncodingJSON Encoding = "json"
)

// Form says what an artifact's value is replaced with.
type Form string

const (
	// FormValue (the default) replaces the value with
	// {"artifact": {"id", "uri", "mime_type", "size_bytes"}, "summary": "..."}:
	// the model reads a compact ref, the full ArtifactRef is listed in
	// the result's _meta[MetaArtifactsKey] (an MCP result) and in
	// Result.Artifacts.
	FormValue Form = "value"
	// FormText replaces the value with a JSON string holding that object,
	// for places where the MCP schema wants a string (a text block's text).
	FormText Form = "text"
	// FormBlock applies to an MCP content block (Path names the block, e.g.
	// "content.1"): the block becomes a text block with the summary and ref
	// followed by a resource_link block to mcpx://artifacts/{id}. The bytes
	// come from the block's data, resource.blob, resource.text or text field.
	FormBlock Form = "block"
)

// Rewrite is one instruction of the rewrite language that built-in and WASM
// layers share. Layers look at a Doc and return rewrites; the engine executes
// them, so layers never touch bytes.
type Rewrite struct {
	// Path locates the value in gjson syntax; `#` and `*` components match
	// every index or key, so one rewrite may apply to many values.
	Path string `json:"path"`
	// Target is the document Path is relative to; defaults to TargetPayload.
	Target Target `json:"target,omitempty"`
	// Action is what to do; required.
	Action Action `json:"action"`
	// Encoding of the value for ActionArtifact and ActionTruncate; defaults
	// to EncodingAuto.
	Encoding Encoding `json:"encoding,omitempty"`
	// Verify, with EncodingBase64, refuses to store bytes whose first bytes
	// are not a known file signature (PDF, PNG, ZIP, ...).
	Verify bool `json:"verify,omitempty"`
	// MIME is the artifact's media type; when empty it is detected from the
	// bytes, or text/plain or application/json by encoding.
	MIME string `json:"mime,omitempty"`
	// Filename is the artifact's file name; a template like Summary.
	Filename string `json:"filename,omitempty"`
	// Summary is the template of the text the model reads. A placeholder
	// is {name}; {a|b|c} takes the first non-empty of several. Names: kind,
	// mime, filename, name (the file name without extension), size (human,
	// "2.3 MB"), bytes, chars, id, uri, url, server, tool, path, .key (a
	// sibling field of the value, as in {.name}) and arg.key (an argument
	// of the call). A known name with no value renders empty; braces around
	// anything else are kept as they are. Empty gives a default summary.
	Summary string `json:"summary,omitempty"`
	// Keep is how much ActionTruncate keeps (characters, items or members),
	// and how many characters of preview ActionArtifact adds for text.
	Keep int `json:"keep,omitempty"`
	// KeepLast, with ActionTruncate, also keeps the last KeepLast
	// characters, items or members, after the marker: keep 0 and
	// keep_last 5 keeps the last five entries of a history.
	KeepLast int `json:"keep_last,omitempty"`
	// Form of an artifact's replacement; defaults to FormValue.
	Form Form `json:"form,omitempty"`
	// Value is the JSON that ActionReplace puts in place.
	Value json.RawMessage `json:"value,omitempty"`
	// Splat, with ActionReplace and an array Value, puts the array's
	// elements in place of one array element.
	Splat bool `json:"splat,omitempty"`
	// MinSize leaves values whose JSON text is shorter than this alone.
	MinSize int `json:"min_size,omitempty"`
	// Meta is copied into the event of the stored artifact.
	Meta map[string]string `json:"meta,omitempty"`
}

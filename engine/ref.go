package engine

import (
	"encoding/json"

	"github.com/mcpx-dev/mcpx/store"
)

const (
	// URIScheme prefixes artifact URIs: mcpx://artifacts/{id}.
	URIScheme = "mcpx://artifacts/"
	// MetaStoredKey is the key under the result's _meta (or "_mcpx" of a
	// non-MCP object) that lists the originals replace and drop stored:
	// [{"path", "action", "artifact": ArtifactRef, "summary"}].
	MetaStoredKey = "mcpx/stored"
)

// artifactURI returns the MCP resource URI of an artifact id.
func artifactURI(id string) string { return URIScheme + id }

// ArtifactRef is the compact, model-safe reference to a stored artifact that
// replaces removed bytes. Its fields are docs/design.md's "ArtifactRef".
type ArtifactRef struct {
	ID        string       `json:"id"`
	MIMEType  string       `json:"mime_type,omitempty"`
	SizeBytes int64        `json:"size_bytes"`
	Filename  string       `json:"filename,omitempty"`
	SHA256    string       `json:"sha256,omitempty"`
	Scope     *store.Scope `json:"scope,omitempty"`
	Source    store.Source `json:"source"`
	// URI is the artifact's MCP resource URI.
	URI string `json:"uri"`
	// URL is a signed download URL, set when the engine has a Linker.
	URL string `json:"url,omitempty"`
	// Truncated is set when the store kept no bytes (no store configured).
	Truncated bool `json:"truncated,omitempty"`
	// NotStored is set when a store limit refused the value, or the store
	// failed to keep it: it was not kept (Truncated is set too) and the
	// result holds a preview only.
	NotStored *NotStored `json:"not_stored,omitempty"`
	// Encoding is how the base64 original was written, when the stored
	// bytes are decoded from anything but plain standard base64:
	// Encoding.Encode(bytes) gives the original string back.
	Encoding *Base64Shape `json:"encoding,omitempty"`
	// Content is what the bytes say about themselves (an inspect.Summary
	// as JSON), for hosts and later layers; the model reads it in the
	// summary sentence instead (see replacement.marshal).
	Content json.RawMessage `json:"content,omitempty"`
}

// NotStored says which store limit refused a value, or how the store
// failed (the structured warning of a store that exists but did not take
// it).
type NotStored struct {
	// Reason is a sentence for the model.
	Reason string `json:"reason"`
	// Limit is the limit's configuration name ("max_artifact_bytes");
	// empty when the store failed (a full disk, an object store that is
	// down): Reason then says how, and the result's Failures carry the
	// store's error (ErrStoreWrite).
	Limit string `json:"limit,omitempty"`
	// Max is the limit's value; zero when the store failed.
	Max int64 `json:"max,omitempty"`
}

// RefFromStore builds the model-facing ref of a stored artifact.
func RefFromStore(r store.Ref) ArtifactRef {
	ref := ArtifactRef{
		ID:        r.ID,
		MIMEType:  r.MIMEType,
		SizeBytes: r.SizeBytes,
		Filename:  r.Filename,
		SHA256:    r.SHA256,
		Source:    r.Source,
		URI:       artifactURI(r.ID),
		Truncated: r.Truncated,
		Content:   r.Content,
	}
	if !r.Scope.IsZero() {
		s := r.Scope
		ref.Scope = &s
	}
	return ref
}

// Linker makes download URLs for artifacts (signed, expiring); the web
// package provides one. A nil Linker leaves ArtifactRef.URL empty.
type Linker interface {
	ArtifactURL(ref ArtifactRef) string
}

// replacement is a value moved to the store: its full ref, and the
// sentence the model reads in its place.
type replacement struct {
	Artifact ArtifactRef
	Summary  string
	Preview  string
}

// modelRef is what the model reads of a ref in place of a value: what
// names the artifact and what it is. The hash, source, scope, encoding
// and content summary cost tokens the model has no use for (the summary
// sentence says what is inside); hosts find the full ref in
// _meta[MetaArtifactsKey]. URL, Truncated and NotStored stay: the model
// hands the link on, and must know when no bytes were kept.
type modelRef struct {
	ID        string     `json:"id"`
	URI       string     `json:"uri"`
	MIMEType  string     `json:"mime_type,omitempty"`
	SizeBytes int64      `json:"size_bytes"`
	URL       string     `json:"url,omitempty"`
	Truncated bool       `json:"truncated,omitempty"`
	NotStored *NotStored `json:"not_stored,omitempty"`
}

// marshal is the JSON put in place of the value:
// {"artifact": {"id", "uri", "mime_type", "size_bytes"}, "summary", "preview"}.
func (r replacement) marshal() []byte {
	a := r.Artifact
	b, err := json.Marshal(struct {
		Artifact modelRef `json:"artifact"`
		Summary  string   `json:"summary"`
		Preview  string   `json:"preview,omitempty"`
	}{modelRef{a.ID, a.URI, a.MIMEType, a.SizeBytes, a.URL, a.Truncated, a.NotStored}, r.Summary, r.Preview})
	if err != nil { // only strings and numbers: cannot fail
		panic(err)
	}
	return b
}

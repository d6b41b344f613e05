package store

import "time"

// NewRef returns the ref of new content put with o: the artifact's id, the
// sha256 and size of its bytes, and o's MIME type, file name, scope and
// source, created now (UTC, without a monotonic reading, so that the ref
// compares equal after a JSON round trip). Every backend builds its refs
// here, so they agree field for field.
func NewRef(id, sha256hex string, size int64, o PutOptions) Ref {
	return Ref{
		ID:        id,
		MIMEType:  o.MIMEType,
		SizeBytes: size,
		Filename:  o.Filename,
		SHA256:    sha256hex,
		Scope:     o.Scope,
		Source:    o.Source,
		Created:   time.Now().UTC().Round(0),
	}
}

package inspect

// STUB by helper SUMMARIES so the branch compiles; helper QUERY owns this
// file and replaces it at merge.

import (
	"context"
	"io"
)

func inspectArchive(ctx context.Context, r io.ReaderAt, size int64, mime string, lim Limits) (Summary, []TextPart, error) {
	return Summary{Kind: "archive"}, nil, nil
}

// ArchiveEntry returns an archive member's bytes (at most maxBytes) and
// its MIME type.
func ArchiveEntry(ctx context.Context, r io.ReaderAt, size int64, mime, name string, maxBytes int64) (data []byte, entryMime string, err error) {
	return nil, "", errNotImplemented
}

// ArchiveNames returns the first max member names.
func ArchiveNames(ctx context.Context, r io.ReaderAt, size int64, mime string, max int) ([]string, error) {
	return nil, errNotImplemented
}

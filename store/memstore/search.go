package memstore

// STUB by helper SUMMARIES so the branch compiles; helper SEARCH owns this
// file and replaces it at merge.

import "github.com/mcpx-dev/mcpx/store"

// indexParts indexes an artifact's text parts for Search. The caller
// holds s.mu for writing; s.parts[id] holds parts already.
func (s *Store) indexParts(id string, parts []store.TextPart) {}

// Package typesize holds the test that keeps every type of the
// repository small: a struct of more than 25 fields or a type of more
// than 40 methods holds several concerns, each of which belongs in a type
// of its own that owns its state and its lock (docs/design.md, "The
// gateway's rooms").
package typesize

package inspect

// This file is helper QUERY's stand-in for the types helper SUMMARIES
// declares in inspect.go; delete it at merge.

import (
	"errors"
	"time"
)

// ErrByteCap is returned by a read past Limits.MaxBytes (stand-in).
var ErrByteCap = errors.New("inspect: byte cap reached")

// Defaults for Limits (stand-in; SUMMARIES' inspect.go declares them).
const (
	DefaultMaxBytes     int64 = 64 << 20
	DefaultTimeout            = 250 * time.Millisecond
	DefaultMaxTextBytes int64 = 1 << 20
)

// Limits bound an inspection (stand-in).
type Limits struct {
	MaxBytes     int64
	Timeout      time.Duration
	MaxTextBytes int64
}

// Summary is what an artifact's bytes say (stand-in).
type Summary struct {
	Kind       string   `json:"kind"`
	Format     string   `json:"format,omitempty"`
	Pages      int      `json:"pages,omitempty"`
	Title      string   `json:"title,omitempty"`
	Author     string   `json:"author,omitempty"`
	Text       string   `json:"text,omitempty"`
	Width      int      `json:"width,omitempty"`
	Height     int      `json:"height,omitempty"`
	Entries    int      `json:"entries,omitempty"`
	Names      []string `json:"names,omitempty"`
	Sheets     []string `json:"sheets,omitempty"`
	Words      int      `json:"words,omitempty"`
	DurationMS int64    `json:"duration_ms,omitempty"`
	Lines      int64    `json:"lines,omitempty"`
	Keys       []string `json:"keys,omitempty"`
	Length     int      `json:"length,omitempty"`
	ItemKeys   []string `json:"item_keys,omitempty"`
	Columns    []string `json:"columns,omitempty"`
	Rows       int64    `json:"rows,omitempty"`
	Partial    string   `json:"partial,omitempty"`
}

// TextPart is searchable text and where it is (stand-in).
type TextPart struct {
	Place string `json:"place"`
	Text  string `json:"text"`
}

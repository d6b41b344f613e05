package engine

// Content summaries: what a stored artifact's bytes say (pages, pixel
// dimensions, line count, JSON keys ...), read back from the store right
// after the put, bounded by InspectConfig, kept with the artifact
// (store.Annotator) and named by summary templates as {content.*}.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/inspect"
	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/store"
)

// InspectConfig bounds the content summaries of stored artifacts, under
// "inspect" in the pipeline config:
//
//	{"inspect": {"max_bytes": 67108864, "timeout_ms": 250, "max_text_bytes": 1048576}}
//
// A summary that reaches a cap is kept as far as it got, marked partial;
// it never fails or holds up the call past the timeout.
type InspectConfig struct {
	// Enabled switches summaries off when false. Defaults to true.
	Enabled *bool `json:"enabled,omitempty"`
	// MaxBytes caps the bytes one summary reads. Defaults to
	// inspect.DefaultMaxBytes (64 MiB).
	MaxBytes int64 `json:"max_bytes,omitempty"`
	// TimeoutMS caps one summary's time in milliseconds. Defaults to
	// inspect.DefaultTimeout (250 ms).
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	// MaxTextBytes caps the text of one artifact kept for search. Defaults
	// to inspect.DefaultMaxTextBytes (1 MiB).
	MaxTextBytes int64 `json:"max_text_bytes,omitempty"`
	// SearchTimeoutMS caps, in milliseconds, reading the whole text of an
	// artifact for search whose summary ran out of TimeoutMS (a long
	// PDF's later pages): a store that indexes text later (the fs store)
	// reads it then, beside the calls, up to MaxBytes read and
	// MaxTextBytes kept. Defaults to DefaultSearchTimeoutMS (30 s);
	// values below 1 mean the default.
	SearchTimeoutMS int64 `json:"search_timeout_ms,omitempty"`
}

// DefaultSearchTimeoutMS is InspectConfig.SearchTimeoutMS's default: a
// 100-page PDF's text takes about 1 s of CPU (BENCHMARKS.md).
const DefaultSearchTimeoutMS = 30_000

// SearchText is the store.TextReader of c (fsstore's Config.Text): the
// text parts of a whole artifact, read within SearchTimeoutMS, MaxBytes
// and MaxTextBytes, for the artifacts whose summary ran out of time.
func SearchText(c InspectConfig) store.TextReader {
	lim := c.limits()
	lim.Timeout = time.Duration(c.SearchTimeoutMS) * time.Millisecond
	if c.SearchTimeoutMS < 1 {
		lim.Timeout = DefaultSearchTimeoutMS * time.Millisecond
	}
	return func(ctx context.Context, ref store.Ref, r io.ReaderAt, size int64) ([]store.TextPart, error) {
		_, parts, err := inspect.Inspect(ctx, r, size, ref.MIMEType, lim)
		if err != nil {
			return nil, err
		}
		return storeParts(parts), nil
	}
}

// storeParts is parts as a store keeps them.
func storeParts(parts []inspect.TextPart) []store.TextPart {
	sp := make([]store.TextPart, len(parts))
	for i, p := range parts {
		sp[i] = store.TextPart{Place: p.Place, Text: p.Text}
	}
	return sp
}

// enabled reports whether summaries are on.
func (c InspectConfig) enabled() bool { return c.Enabled == nil || *c.Enabled }

// limits returns the inspect limits, defaults filled in.
func (c InspectConfig) limits() inspect.Limits {
	return inspect.Limits{
		MaxBytes:     c.MaxBytes,
		Timeout:      time.Duration(c.TimeoutMS) * time.Millisecond,
		MaxTextBytes: c.MaxTextBytes,
	}.WithDefaults()
}

// inspectStored summarises the artifact sref, stored just now at path by
// step of call c: a store that knew these bytes already returns the
// summary it kept; else the bytes are read back and inspected, drawing on
// the process's memory budget, and the summary and text parts are handed
// to the store when it is an Annotator. Any failure leaves the summary out
// (logged); a budget that cannot hold the inspection leaves the kind alone,
// not kept in the store, and emits EventWorkRefused. A call never fails
// for its summary.
func (e *Engine) inspectStored(ctx context.Context, c Call, step, path string, sref store.Ref) (json.RawMessage, *inspect.Summary) {
	if !e.cfg.Inspect.enabled() || sref.Truncated {
		return nil, nil
	}
	if len(sref.Content) > 0 {
		var s inspect.Summary
		if json.Unmarshal(sref.Content, &s) == nil {
			return sref.Content, &s
		}
	}
	lim := e.cfg.Inspect.limits()
	lim.Memory = e.mem
	rc, _, err := e.store.Get(ctx, sref.ID, nil)
	if err != nil {
		e.log.Debug("no content summary: cannot read the artifact back", "artifact", sref.ID, "error", err)
		return nil, nil
	}
	defer rc.Close()
	r, ok := rc.(io.ReaderAt)
	size, partial := sref.SizeBytes, false
	if !ok {
		// A stream (an object store's body): its first MaxBytes are read
		// into memory, reserved with the most any kind's inspection holds
		// in one go, so that no inspection holds some while it waits for
		// more.
		n := min(sref.SizeBytes, lim.MaxBytes)
		rctx, cancel := context.WithTimeout(ctx, lim.Timeout)
		release, err := e.mem.Reserve(rctx, n+lim.Footprint("", n), fmt.Sprintf("reading a %s artifact back for its summary", humanize.Bytes(n)))
		cancel()
		if err != nil {
			e.workRefused(c, step, path, "content summary", err)
			return nil, nil
		}
		defer release()
		lim.Memory = nil
		b := make([]byte, n)
		m, _ := io.ReadFull(rc, b)
		r, size, partial = bytes.NewReader(b[:m]), int64(m), int64(m) < sref.SizeBytes
	}
	s, parts, err := inspect.Inspect(ctx, r, size, sref.MIMEType, lim)
	if errors.Is(err, inspect.ErrMemory) {
		e.workRefused(c, step, path, "content summary", err)
		content, _ := json.Marshal(s)
		return content, &s
	}
	if err != nil {
		e.log.Warn("no content summary", "artifact", sref.ID, "error", err)
		return nil, nil
	}
	if s.Kind == "" {
		return nil, nil
	}
	if partial && s.Partial == "" {
		s.Partial = inspect.PartialBytes
	}
	content, err := json.Marshal(s)
	if err != nil {
		return nil, nil
	}
	// A summary that ran out of time read only the start (a long PDF's
	// first pages): a store that reads the text later, within a budget
	// of its own, makes the rest searchable too.
	if la, ok := e.store.(store.LateAnnotator); ok && s.Partial == inspect.PartialTime {
		err := la.AnnotateLater(ctx, sref.ID, content)
		if err == nil {
			return content, &s
		}
		if !errors.Is(err, store.ErrNoTextReader) {
			e.log.Warn("content summary not kept in the store", "artifact", sref.ID, "error", err)
			return content, &s
		}
	}
	if an, ok := e.store.(store.Annotator); ok {
		if err := an.Annotate(ctx, sref.ID, content, storeParts(parts)); err != nil {
			e.log.Warn("content summary not kept in the store", "artifact", sref.ID, "error", err)
		}
	}
	return content, &s
}

// contentVar resolves a {content.name} template field against s: the
// Summary's JSON names (pages, text, width, height, entries, lines, keys,
// ...); lists render comma-separated, duration_ms also as "duration"
// ("1:02:03" or "4.5 s").
func contentVar(s *inspect.Summary, name string) string {
	if s == nil {
		return ""
	}
	num := func(n int64) string {
		if n == 0 {
			return ""
		}
		return strconv.FormatInt(n, 10)
	}
	switch name {
	case "kind":
		return s.Kind
	case "format":
		return s.Format
	case "pages":
		return num(int64(s.Pages))
	case "title":
		return s.Title
	case "author":
		return s.Author
	case "text":
		return s.Text
	case "width":
		return num(int64(s.Width))
	case "height":
		return num(int64(s.Height))
	case "entries":
		return num(int64(s.Entries))
	case "names":
		return strings.Join(s.Names, ", ")
	case "sheets":
		return strings.Join(s.Sheets, ", ")
	case "words":
		return num(int64(s.Words))
	case "duration_ms":
		return num(s.DurationMS)
	case "duration":
		return duration(s.DurationMS)
	case "lines":
		return num(s.Lines)
	case "keys":
		return strings.Join(s.Keys, ", ")
	case "length":
		return num(int64(s.Length))
	case "no_text_pages":
		return num(int64(s.NoTextPages))
	case "no_text":
		return pageNumbers(s.NoText)
	case "item_keys":
		return strings.Join(s.ItemKeys, ", ")
	case "columns":
		return strings.Join(s.Columns, ", ")
	case "rows":
		return num(s.Rows)
	case "partial":
		return s.Partial
	}
	return ""
}

// pageNumbers lists pages: "2, 5, 7".
func pageNumbers(pages []int) string {
	s := make([]string, len(pages))
	for i, p := range pages {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}

// contentSize is the pixel size a content summary (an ArtifactRef's
// Content) gives, zero when it gives none.
func contentSize(content json.RawMessage) (w, h int) {
	if len(content) == 0 {
		return 0, 0
	}
	r := gjson.GetManyBytes(content, "width", "height")
	return int(r[0].Int()), int(r[1].Int())
}

// contentVars are the names contentVar knows, after "content.".
var contentVars = map[string]bool{
	"kind": true, "format": true, "pages": true, "title": true, "author": true, "text": true,
	"width": true, "height": true, "entries": true, "names": true, "sheets": true, "words": true,
	"duration_ms": true, "duration": true, "lines": true, "keys": true, "length": true,
	"item_keys": true, "columns": true, "rows": true, "partial": true,
	"no_text_pages": true, "no_text": true,
}

// duration renders milliseconds as people read a recording's length.
func duration(ms int64) string {
	if ms <= 0 {
		return ""
	}
	if ms < 60_000 {
		return strconv.FormatFloat(float64(ms)/1000, 'f', 1, 64) + " s"
	}
	sec := ms / 1000
	h, m, s := sec/3600, sec/60%60, sec%60
	if h > 0 {
		return strconv.FormatInt(h, 10) + ":" + twoDigits(m) + ":" + twoDigits(s)
	}
	return strconv.FormatInt(m, 10) + ":" + twoDigits(s)
}

func twoDigits(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// Default names of the tools that read stored artifacts further.
const (
	DefaultQueryTool  = "artifacts_query"
	DefaultSearchTool = "artifacts_search"
)

// QueryTools names the tools a default summary tells the model to ask for
// more of an artifact (a page, lines, a JSON path, search hits): the
// gateway's artifact query and search tools. Zero fields take the
// defaults.
type QueryTools struct {
	Query  string // defaults to DefaultQueryTool
	Search string // defaults to DefaultSearchTool
}

func (t QueryTools) names() (query, search string) {
	return nonEmpty(t.Query, DefaultQueryTool), nonEmpty(t.Search, DefaultSearchTool)
}

package artifacts

// The artifact tools: artifacts_query reads part of one artifact the
// caller may read (lines, bytes, grep, a JSON path, jq, a PDF page, an
// archive entry) and artifacts_search ranks the lines of every such
// artifact (store.Searcher), each answer within a character budget. They
// are listed beside the upstreams' tools in both protocol revisions and
// scoped as artifact resources are (access.go): another principal's
// artifact is "not found".

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/mcpx-dev/mcpx/engine"
	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/gateway/internal/jsonrpc"
	"github.com/mcpx-dev/mcpx/gateway/internal/router"
	"github.com/mcpx-dev/mcpx/query"
	"github.com/mcpx-dev/mcpx/query/jq"
	"github.com/mcpx-dev/mcpx/store"
)

// Artifact tool kinds (router.Route.Generated of a route with no upstream).
const (
	KindQuery  = "artifacts_query"
	KindSearch = "artifacts_search"
)

// Tools returns the artifact tools' routes (none when disabled; no
// search when the store cannot search).
func (s *Service) Tools() []router.Own {
	o := s.o
	if o.Disabled {
		return nil
	}
	out := []router.Own{{Name: o.QueryName, Kind: KindQuery, Def: s.toolDef(KindQuery)}}
	if _, ok := s.st.(store.Searcher); ok {
		out = append(out, router.Own{Name: o.SearchName, Kind: KindSearch, Def: s.toolDef(KindSearch)})
	}
	return out
}

const querySchema = `{"type":"object","properties":{
"id":{"type":"string","description":"the artifact's id, or its mcpx://artifacts/{id} URI"},
"lines":{"type":"string","description":"line range A-B (1-based, inclusive), or one line A"},
"bytes":{"type":"string","description":"byte range A-B (0-based, B excluded)"},
"grep":{"type":"string","description":"a regular expression (RE2); returns matching lines with their numbers (a PDF's or office document's text too, each line named by its page or entry)"},
"context":{"type":"integer","minimum":0,"description":"with grep: lines shown around each match"},
"json":{"type":"string","description":"a JSON path (gjson syntax, e.g. items.0.name or items.#.id)"},
"jq":{"type":"string","description":"a jq program run on a JSON artifact"},
"page":{"type":"integer","minimum":1,"description":"a PDF page: its text, or with view \"image\" the page as an image"},
"view":{"type":"string","enum":["text","image"],"description":"with page: \"text\" (the default) or \"image\", the page rendered as an image fitted to your view, to look at a scan or a chart that has no text; for clients that take images"},
"entry":{"type":"string","description":"an archive member by name: text inline, else stored as its own artifact"},
"region":{"type":"object","properties":{"x":{"type":"integer","minimum":0},"y":{"type":"integer","minimum":0},"width":{"type":"integer","minimum":0},"height":{"type":"integer","minimum":0}},"additionalProperties":false,"description":"an image view of part of a stored image, in its pixels from the top left (width or height 0 or absent: to the edge), fitted to your view; for clients that take images"},
"max_chars":{"type":"integer","minimum":1,"description":"answer at most this many characters"}},
"required":["id"],"additionalProperties":false}`

const searchSchema = `{"type":"object","properties":{
"query":{"type":"string","description":"words that must all occur on one line, in any order; \"quoted words\" must occur together"},
"limit":{"type":"integer","minimum":1,"description":"hits to return, best first"}},
"required":["query"],"additionalProperties":false}`

// toolDef is the definition of an artifact tool.
func (s *Service) toolDef(kind string) json.RawMessage {
	o := s.o
	var desc, schema string
	switch kind {
	case KindQuery:
		desc = fmt.Sprintf("Read part of a stored artifact (a tool result mcpx kept out of the context): give its id and exactly one of lines, bytes, grep (with context), json, jq, page (with view), entry or region. Answers hold at most %d characters and say what was cut and how to ask for the rest.", o.MaxChars)
		schema = querySchema
	case KindSearch:
		desc = fmt.Sprintf("Search the text of your stored artifacts (large tool results, PDF pages, archive members): returns the best lines, each with its artifact id, place (line, page, entry) and the line itself. Read around a hit with %s.", o.QueryName)
		schema = searchSchema
	}
	b := []byte(`{"name":""}`)
	b, _ = sjson.SetBytes(b, "description", desc)
	b, _ = sjson.SetRawBytes(b, "inputSchema", compactJSON(schema))
	b, _ = sjson.SetRawBytes(b, "annotations", []byte(`{"readOnlyHint":true,"openWorldHint":false}`))
	b, _ = sjson.SetBytes(b, `_meta.anthropic/maxResultSizeChars`, o.MaxChars)
	return b
}

func compactJSON(s string) []byte {
	var m json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	out, _ := json.Marshal(m)
	return out
}

// Tool runs the artifact tool of kind for the model, whose client takes
// view.
func (s *Service) Tool(ctx context.Context, rd Reader, kind string, args json.RawMessage, view engine.View) (json.RawMessage, error) {
	if len(args) > 0 && !gjson.ValidBytes(args) || len(args) > 0 && !gjson.ParseBytes(args).IsObject() {
		return ToolError("arguments must be a JSON object"), nil
	}
	switch kind {
	case KindQuery:
		return s.query(ctx, rd, args, view)
	case KindSearch:
		return s.search(ctx, rd, args)
	}
	return nil, fmt.Errorf("%w: artifact tool %q", jsonrpc.ErrUnknownTool, kind)
}

// maxChars is the budget of one answer: the configured cap, or the call's
// max_chars when lower.
func (s *Service) maxChars(args json.RawMessage) int {
	n := s.o.MaxChars
	if m := gjson.GetBytes(args, "max_chars").Int(); m > 0 && int(m) < n {
		n = int(m)
	}
	return n
}

// query answers artifacts_query; a region's view and a page's image are
// an image block, for a client whose view takes images.
func (s *Service) query(ctx context.Context, rd Reader, args json.RawMessage, view engine.View) (json.RawMessage, error) {
	o := s.o
	id := gjson.GetBytes(args, "id").String()
	if u, ok := ID(id); ok {
		id = u
	} else if strings.HasPrefix(id, engine.URIScheme) {
		id = ""
	}
	if id == "" {
		return ToolError(`"id" is required: an artifact id or its mcpx://artifacts/{id} URI`), nil
	}
	req, err := queryRequest(args)
	if err != nil {
		return ToolError(err.Error()), nil
	}
	if req.Region != nil && !view.Images {
		return ToolError(fmt.Sprintf(`region: this client takes no image content (no serve.profiles entry with "images": true matches its name); find the image's words with %s, or download it by its id`, o.SearchName)), nil
	}
	if req.View == query.ViewImage && !view.Images {
		return ToolError(fmt.Sprintf(`view "image": this client takes no image content (no serve.profiles entry with "images": true matches its name); ask for the page's text (page without view), find words with %s, or download the PDF by its id`, o.SearchName)), nil
	}
	notFound := ToolError(fmt.Sprintf("artifact %s not found: use an id from a result of this client, or %s to find one", id, o.SearchName))
	// The caller's own scope of it: a member the query stores is the
	// caller's, never the scope of whoever put the bytes first.
	ref, ok, err := s.holding(ctx, rd, id)
	if err != nil {
		return ToolError(fmt.Sprintf("cannot read artifact %s: %v", id, err)), nil
	}
	if !ok {
		return notFound, nil
	}
	rd.Shown.Add(id)
	budget := s.maxChars(args)
	qctx, cancel := context.WithTimeout(ctx, time.Duration(o.Timeout))
	defer cancel()
	ans, err := query.Run(qctx, s.st, ref, req, query.Budget{MaxChars: budget, Timeout: time.Duration(o.Timeout), MaxMemory: o.MaxMemory,
		MaxDepth: o.MaxJSONDepth, MaxExprChars: o.MaxExprChars, JQ: jq.Run, Memory: s.mem, ImageView: view.ImageView})
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound, nil
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil && !errors.Is(err, query.ErrBudget) {
			err = fmt.Errorf("%w: stopped after %s", query.ErrBudget, time.Duration(o.Timeout))
		}
		return ToolError(fmt.Sprintf("artifacts query on %s failed: %v", id, err)), nil
	}
	if ans.Stored != nil {
		rd.Shown.Add(ans.Stored.ID)
	}
	if img := ans.Image; img != nil {
		out, _ := sjson.SetBytes([]byte(`{"content":[{"type":"image"},{"type":"text"}]}`), "content.0.data", base64.StdEncoding.EncodeToString(img.Data))
		out, _ = sjson.SetBytes(out, "content.0.mimeType", img.MIMEType)
		text := ans.Text
		if ans.Cut != "" {
			text += "\n[cut: " + ans.Cut + "]"
		}
		out, _ = sjson.SetBytes(out, "content.1.text", text)
		return out, nil
	}
	text := ans.Text
	var trailer []string
	if ans.Stored != nil {
		trailer = append(trailer, fmt.Sprintf("[stored as artifact %s (%s, %d bytes): %s%s]", ans.Stored.ID, ans.Stored.MIMEType, ans.Stored.SizeBytes, engine.URIScheme, ans.Stored.ID))
	}
	if ans.Cut != "" {
		trailer = append(trailer, "[cut: "+ans.Cut+"]")
	}
	text = fitText(text, strings.Join(trailer, "\n"), budget)
	return toolText(text, nil), nil
}

// fitText joins text and trailer within budget characters, cutting text
// (at a line end when one is near) and saying so.
func fitText(text, trailer string, budget int) string {
	join := func(t, tr string) string {
		if tr == "" {
			return t
		}
		if t != "" && !strings.HasSuffix(t, "\n") {
			t += "\n"
		}
		return t + tr
	}
	out := join(text, trailer)
	if utf8.RuneCountInString(out) <= budget {
		return out
	}
	total := utf8.RuneCountInString(text)
	// the note's own length, with room for the numbers' digits
	room := max(0, budget-utf8.RuneCountInString(trailer)-80)
	cut := string([]rune(text)[:min(room, total)])
	if i := strings.LastIndexByte(cut, '\n'); i > len(cut)/2 {
		cut = cut[:i+1]
	}
	note := fmt.Sprintf("[cut at %d characters of %d: ask for a narrower range or grep]", utf8.RuneCountInString(cut), total)
	return join(join(cut, note), trailer)
}

// queryRequest reads the query mode from args: exactly one.
func queryRequest(args json.RawMessage) (query.Request, error) {
	var req query.Request
	var modes []string
	a := gjson.ParseBytes(args)
	if v := a.Get("lines"); v.Exists() {
		r, err := parseRange(v, true)
		if err != nil {
			return req, fmt.Errorf("lines: %w", err)
		}
		req.Lines, modes = &r, append(modes, "lines")
	}
	if v := a.Get("bytes"); v.Exists() {
		r, err := parseRange(v, false)
		if err != nil {
			return req, fmt.Errorf("bytes: %w", err)
		}
		req.Bytes, modes = &r, append(modes, "bytes")
	}
	if v := a.Get("grep"); v.Exists() {
		req.Grep, modes = v.String(), append(modes, "grep")
		if req.Grep == "" {
			return req, errors.New("grep: want a regular expression")
		}
	}
	if v := a.Get("context"); v.Exists() {
		if req.Grep == "" || v.Type != gjson.Number || v.Int() < 0 {
			return req, errors.New("context: want a number of lines (0 or more), with grep")
		}
		req.Context = int(v.Int())
	}
	if v := a.Get("json"); v.Exists() {
		req.JSON, modes = v.String(), append(modes, "json")
	}
	if v := a.Get("jq"); v.Exists() {
		req.JQ, modes = v.String(), append(modes, "jq")
	}
	if v := a.Get("page"); v.Exists() {
		if v.Type != gjson.Number || v.Int() < 1 {
			return req, errors.New("page: want a page number from 1")
		}
		req.Page, modes = int(v.Int()), append(modes, "page")
	}
	if v := a.Get("view"); v.Exists() {
		if v.Type != gjson.String || (v.Str != query.ViewText && v.Str != query.ViewImage) || req.Page == 0 {
			return req, errors.New(`view: want "text" or "image", with page`)
		}
		req.View = v.Str
	}
	if v := a.Get("entry"); v.Exists() {
		req.Entry, modes = v.String(), append(modes, "entry")
	}
	if v := a.Get("region"); v.Exists() {
		var rg query.Region
		if !v.IsObject() || json.Unmarshal([]byte(v.Raw), &rg) != nil {
			return req, errors.New(`region: want {"x", "y", "width", "height"} in pixels`)
		}
		req.Region, modes = &rg, append(modes, "region")
	}
	if len(modes) != 1 {
		return req, fmt.Errorf("give exactly one of lines, bytes, grep, json, jq, page, entry, region (got %d: %s)", len(modes), strings.Join(modes, ", "))
	}
	return req, nil
}

// parseRange reads "A-B", "A" or a number. Lines are 1-based inclusive
// (A alone is one line); bytes 0-based with B excluded (A alone: to the
// end, as much as fits the answer: query.Range's To of 0).
func parseRange(v gjson.Result, lines bool) (query.Range, error) {
	s := strings.TrimSpace(v.String())
	if v.Type == gjson.Number {
		s = strconv.FormatInt(v.Int(), 10)
	}
	a, b, dash := strings.Cut(s, "-")
	from, err := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	if err != nil || from < 0 || lines && from < 1 {
		return query.Range{}, fmt.Errorf("want A-B, got %q", s)
	}
	to := from
	if !lines {
		to = 0
	}
	if dash && strings.TrimSpace(b) != "" {
		if to, err = strconv.ParseInt(strings.TrimSpace(b), 10, 64); err != nil || to < from {
			return query.Range{}, fmt.Errorf("want A-B with A <= B, got %q", s)
		}
	} else if dash && lines {
		to = 1<<62 - 1
	}
	return query.Range{From: from, To: to}, nil
}

// search answers artifacts_search.
func (s *Service) search(ctx context.Context, rd Reader, args json.RawMessage) (json.RawMessage, error) {
	o := s.o
	sr, ok := s.st.(store.Searcher)
	if !ok {
		return ToolError("this store cannot search"), nil
	}
	q := gjson.GetBytes(args, "query").String()
	if err := store.CheckSearchQuery(q, o.MaxSearchQueryChars, o.MaxSearchTerms); err != nil {
		return ToolError(err.Error()), nil
	}
	limit := config.DefaultSearchHits
	if l := gjson.GetBytes(args, "limit"); l.Exists() {
		if l.Type != gjson.Number || l.Int() < 1 {
			return ToolError("limit: want a number from 1"), nil
		}
		limit = int(min(l.Int(), int64(o.MaxSearchHits)))
	}
	// The store filters by the principal's scope; asRead keeps what that
	// filter cannot say (empty fields match any). Ask for more to fill
	// the page after that.
	sctx, cancel := context.WithTimeout(ctx, time.Duration(o.SearchTimeout))
	defer cancel()
	hits, err := sr.Search(sctx, rd.listScope(), q, min(limit*4, 4*o.MaxSearchHits))
	if errors.Is(err, store.ErrBadQuery) {
		return ToolError(`query: want words to search for (e.g. submit order, or "Submit order" for the phrase)`), nil
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return ToolError(fmt.Sprintf("search stopped after %s: search with fewer or rarer words, or grep one artifact with %s", time.Duration(o.SearchTimeout), o.QueryName)), nil
	}
	if err != nil {
		return ToolError(fmt.Sprintf("search failed: %v", err)), nil
	}
	kept := hits[:0]
	for _, h := range hits {
		if len(kept) == limit {
			break
		}
		var ok bool
		if h.Ref, ok = s.asRead(ctx, rd, h.Ref); ok {
			kept = append(kept, h)
		}
	}
	budget := s.maxChars(args)
	var b strings.Builder
	if len(kept) == 0 {
		fmt.Fprintf(&b, "No line of your artifacts holds %s.", q)
	} else {
		fmt.Fprintf(&b, "%d hits for %s, best first, the newest first among equals (artifact id, place (when stored, by which call): line):\n", len(kept), q)
	}
	items := make([]map[string]any, 0, len(kept))
	shown := 0
	for _, h := range kept {
		rd.Shown.Add(h.Ref.ID)
		// When and by which call: the same line in an hour of a page's
		// snapshots is many hits, and only the newest one's refs still exist.
		stored := h.Ref.Created.UTC().Format(time.RFC3339)
		line := fmt.Sprintf("%s %s (stored %s by %s): %s\n", h.Ref.ID, h.Place, stored, callName(h.Ref.Source), h.Snippet)
		if utf8.RuneCountInString(b.String())+utf8.RuneCountInString(line) > budget-200 {
			break
		}
		b.WriteString(line)
		shown++
		items = append(items, map[string]any{"id": h.Ref.ID, "uri": engine.URIScheme + h.Ref.ID, "place": h.Place, "snippet": h.Snippet, "score": h.Score, "mime_type": h.Ref.MIMEType,
			"stored_at": stored, "source": map[string]string{"server": h.Ref.Source.Server, "tool": h.Ref.Source.Tool}})
	}
	if shown < len(kept) {
		fmt.Fprintf(&b, "[cut: %d more hits past %d characters; search with more words or a lower limit]\n", len(kept)-shown, budget)
	}
	if shown > 0 {
		h := kept[0]
		hint := fmt.Sprintf(`"grep": %q`, firstWord(q))
		if n, ok := strings.CutPrefix(h.Place, "line "); ok {
			if k, err := strconv.Atoi(n); err == nil {
				hint = fmt.Sprintf(`"lines": "%d-%d"`, max(1, k-10), k+10)
			}
		}
		fmt.Fprintf(&b, `Read around a hit: %s {"id": %q, %s}`, o.QueryName, h.Ref.ID, hint)
	}
	sc, _ := json.Marshal(map[string]any{"hits": items})
	return toolText(b.String(), sc), nil
}

// callName is the call that stored an artifact, as server/tool.
func callName(src store.Source) string {
	if c := src.Call(); c != "" {
		return c
	}
	return "an unnamed call"
}

// firstWord returns the first word of a query, for a grep hint.
func firstWord(q string) string {
	f := strings.Fields(strings.Trim(q, `"`))
	if len(f) == 0 {
		return q
	}
	return f[0]
}

// toolText is a tool result of one text block, with structuredContent
// when sc is set.
func toolText(text string, sc json.RawMessage) json.RawMessage {
	out := []byte(`{"content":[{"type":"text","text":""}]}`)
	out, _ = sjson.SetBytes(out, "content.0.text", text)
	if len(sc) > 0 {
		out, _ = sjson.SetRawBytes(out, "structuredContent", sc)
	}
	return out
}

// ToolError is a tool result that reports a failure to the model.
func ToolError(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": msg}}, "isError": true})
	return b
}

package query

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/mcpx-dev/mcpx/internal/humanize"
	"github.com/mcpx-dev/mcpx/internal/jsonwalk"
	"github.com/mcpx-dev/mcpx/store"
)

// checkSize refuses an artifact over the b.maxInput() bytes a mode that
// holds its input reads.
func checkSize(ref store.Ref, b Budget, mode string) error {
	if ref.SizeBytes > b.maxInput() {
		return fmt.Errorf("%w: %s holds %s bytes, over the %s a %s query reads; ask for grep or lines instead",
			ErrBudget, ref.ID, humanize.Count(ref.SizeBytes), humanize.Count(b.maxInput()), mode)
	}
	return nil
}

// readAll reads the whole artifact, at most b.maxInput() bytes.
func readAll(ctx context.Context, st store.Store, ref store.Ref, b Budget, mode string) ([]byte, error) {
	if err := checkSize(ref, b, mode); err != nil {
		return nil, err
	}
	rc, _, err := st.Get(ctx, ref.ID, nil)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, b.maxInput()+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > b.maxInput() {
		return nil, fmt.Errorf("%w: %s holds more than the %s bytes a %s query reads", ErrBudget, ref.ID, humanize.Count(b.maxInput()), mode)
	}
	return data, nil
}

// runJSON answers a gjson path.
func runJSON(ctx context.Context, st store.Store, ref store.Ref, path string, b Budget) (Answer, error) {
	perPart, err := checkPath(path)
	if err != nil {
		return Answer{}, err
	}
	if err := checkSize(ref, b, "json"); err != nil {
		return Answer{}, err
	}
	// The document, and what each part of the path may copy of it.
	parts := pathParts(path)
	need := ref.SizeBytes * (1 + parts*perPart)
	if need > b.MaxMemory {
		return Answer{}, fmt.Errorf("%w: the path's %d parts may each copy the artifact's %s bytes, %s bytes in all, over the %s a query may hold; ask fewer parts at once, or lines or grep",
			ErrBudget, parts, humanize.Count(ref.SizeBytes), humanize.Count(need), humanize.Count(b.MaxMemory))
	}
	release, err := b.reserve(ctx, need, "a json path query")
	if err != nil {
		return Answer{}, err
	}
	defer release()
	data, err := readAll(ctx, st, ref, b, "json")
	if err != nil {
		return Answer{}, err
	}
	if err := checkJSON(data, ref, b.MaxDepth); err != nil {
		return Answer{}, err
	}
	res := gjson.GetBytes(data, path)
	rp, part := resultPathOf(ref)
	if !res.Exists() && part {
		// A path the model wrote from the root of the result it saw.
		if rel, ok := rp.within(path); ok {
			res = gjson.GetBytes(data, rel)
		}
	}
	if !res.Exists() {
		hint := topLevel(data)
		if part {
			hint = rp.notFound(data)
		}
		return Answer{}, fmt.Errorf("%w: path %q matches nothing in %s%s", ErrOutOfRange, path, ref.ID, hint)
	}
	a := Answer{Text: res.Raw}
	if res.IsArray() || res.IsObject() {
		res.ForEach(func(_, _ gjson.Result) bool { a.Total++; return true })
	}
	if limit := b.textLimit(); len(a.Text) > limit {
		a.Text = cutUTF8(a.Text, limit)
		p := cutString(path, 40)
		a.Cut = fmt.Sprintf("the first %s of %s characters of the value shown; ask a narrower path (%s.0, %s.#, %s.@keys)",
			humanize.Count(int64(len(a.Text))), humanize.Count(int64(len(res.Raw))), p, p, p)
	}
	return a, nil
}

// checkJSON checks that data is JSON nested at most maxDepth levels,
// without recursion (jsonwalk), before any gjson call walks it.
func checkJSON(data []byte, ref store.Ref, maxDepth int) error {
	err := jsonwalk.WalkFiltered(data, 1, math.MaxInt, maxDepth, func(*jsonwalk.Visit) jsonwalk.Step { return jsonwalk.Descend })
	switch {
	case errors.Is(err, jsonwalk.ErrTooDeep):
		instead := "lines, bytes or grep"
		if maxDepth < DefaultMaxDepth {
			instead = "lines, bytes, grep or jq"
		}
		return fmt.Errorf("%w: %s nests %s levels deep, past the %s a json path query reads; ask for %s instead",
			ErrBudget, ref.ID, humanize.Count(int64(jsonwalk.MaxDepth(data))), humanize.Count(int64(maxDepth)), instead)
	case err != nil:
		if !looksText(data[:min(len(data), 8<<10)]) {
			return notText(ref)
		}
		return fmt.Errorf("%w: %s is not JSON; ask for lines or grep", ErrBadRequest, ref.ID)
	}
	return nil
}

// topLevel is the hint of a path that matches nothing: the first keys of
// the top-level object, or the length of the top-level array. It walks
// the top level once and keeps no more than it shows.
func topLevel(data []byte) string {
	root := gjson.ParseBytes(data)
	switch {
	case root.IsObject():
		if keys, _ := topKeys(root); keys != "" {
			return "; the top-level keys are " + keys
		}
	case root.IsArray():
		n := 0
		root.ForEach(func(_, _ gjson.Result) bool { n++; return true })
		return fmt.Sprintf("; the top level is an array of %d (try 0 or #.KEY)", n)
	}
	return ""
}

// checkPath refuses a path that names a gjson modifier other than the
// few whose answer is at most a copy of their input, and returns how
// many copies of the document one part of the path may make: a # query
// keeps an index (8 bytes) per element beside the elements' copy.
//
// The others can grow a value past the artifact's size (@pretty by its
// depth, @tostr twice per use, @group by its keys, @dig by the square of
// its depth), keep a gjson.Result (88 bytes) per element (@reverse,
// @join), or validate a string's JSON by recursion (@fromstr): jq does
// what they do, in a process whose memory is capped.
func checkPath(path string) (perPart int64, err error) {
	for i := 0; i < len(path); i++ {
		switch c := path[i]; {
		case c == '\\':
			i++
		case c == '"':
			end, ok := jsonwalk.StringEnd([]byte(path), i)
			if !ok {
				return 0, nil // gjson finds nothing; no modifier runs
			}
			i = end - 1
		case c == '@' && (i == 0 || strings.IndexByte(".|[{,:( ", path[i-1]) >= 0):
			name := path[i+1:]
			if n := strings.IndexFunc(name, func(r rune) bool { return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z') }); n >= 0 {
				name = name[:n]
			}
			switch name {
			case "this", "keys", "values", "ugly", "valid", "flatten":
			default:
				return 0, fmt.Errorf("%w: json path modifier @%s can use more memory than the artifact holds; ask jq instead (the json mode runs @this, @keys, @values, @ugly, @valid, @flatten)",
					ErrBadRequest, name)
			}
		}
	}
	if strings.Contains(path, "#") {
		return 5, nil
	}
	return 1, nil
}

// pathParts is how many values a path may answer at once: one, and one
// more per comma of its [a,b] and {a,b} multipaths (a comma in a query's
// value counts too, which errs on the side of holding more).
func pathParts(path string) int64 { return 1 + int64(strings.Count(path, ",")) }

func cutString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutUTF8(s, n) + "…"
}

// runJQ runs a jq program over each JSON value in the artifact through
// b.JQ, which stops it at the deadline, once its output passes the
// budget, or once it needs more than b.MaxMemory: that much is reserved
// from b.Memory first, and the artifact is streamed to it, not held here.
func runJQ(ctx context.Context, st store.Store, ref store.Ref, program string, b Budget) (Answer, error) {
	if b.JQ == nil {
		return Answer{}, fmt.Errorf("%w: no jq runner: set Budget.JQ (query/jq's Run) to run jq programs", ErrBadRequest)
	}
	if err := checkSize(ref, b, "jq"); err != nil {
		return Answer{}, err
	}
	release, err := b.reserve(ctx, b.MaxMemory, "a jq query")
	if err != nil {
		return Answer{}, err
	}
	defer release()
	rp, part := resultPathOf(ref)
	var (
		ans  JQAnswer
		head []byte
	)
	if wrapped, ok := rp.jqProgram(program); ok {
		// A program written from the root of the result the model saw;
		// should it fail, the program as written may still be the
		// artifact's own.
		ans, head, err = jqOnce(ctx, st, ref, wrapped, b)
		if errors.Is(err, ErrBadProgram) {
			ans, head, err = jqOnce(ctx, st, ref, program, b)
		}
	} else {
		ans, head, err = jqOnce(ctx, st, ref, program, b)
	}
	if errors.Is(err, ErrBadProgram) && part && len(bytes.TrimSpace(head)) > 0 {
		return Answer{}, fmt.Errorf("%w; %s", err, rp.jqHint(ref.ID, bytes.TrimSpace(head)[0]))
	}
	if err != nil {
		return Answer{}, err
	}
	a := Answer{Text: strings.TrimSuffix(cutUTF8(ans.Text, b.textLimit()), "\n")}
	if ans.Full {
		a.Cut = fmt.Sprintf("output cut at result %s, over the %s-character budget; narrow the program (first, limit(n; …), .[a:b])",
			humanize.Count(ans.Results), humanize.Count(int64(b.MaxChars)))
	} else {
		a.Total = ans.Results
	}
	return a, nil
}

// jqOnce runs program over the artifact's values through b.JQ, streaming
// them from the store, and returns what it printed and the artifact's
// first bytes.
func jqOnce(ctx context.Context, st store.Store, ref store.Ref, program string, b Budget) (JQAnswer, []byte, error) {
	rc, _, err := st.Get(ctx, ref.ID, nil)
	if err != nil {
		return JQAnswer{}, nil, err
	}
	defer rc.Close()
	// The first bytes tell binary from text that is not JSON.
	br := bufio.NewReaderSize(io.LimitReader(rc, b.maxInput()+1), 8<<10)
	head, _ := br.Peek(8 << 10)
	head = bytes.Clone(head)
	in := &countingReader{r: br}
	ans, err := b.JQ(ctx, program, in, JQLimits{MaxOutput: b.textLimit(), MaxMemory: b.MaxMemory})
	switch {
	case in.n > b.maxInput():
		return ans, head, fmt.Errorf("%w: %s holds more than the %s bytes a jq query reads", ErrBudget, ref.ID, humanize.Count(b.maxInput()))
	case errors.Is(err, ErrNotJSON):
		if ans.Results == 0 && !looksText(head) {
			return ans, head, notText(ref)
		}
		return ans, head, fmt.Errorf("%w: %s is %w; ask for lines or grep", ErrBadRequest, ref.ID, err)
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrBudget):
		return ans, head, fmt.Errorf("%w: the jq program ran past %v", ErrBudget, b.Timeout)
	case err != nil && ctx.Err() != nil:
		return ans, head, fmt.Errorf("query: the jq program stopped: %w", ctx.Err())
	}
	return ans, head, err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

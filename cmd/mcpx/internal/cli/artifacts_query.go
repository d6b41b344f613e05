package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/mcpx-dev/mcpx/membudget"
	"github.com/mcpx-dev/mcpx/query"
	"github.com/mcpx-dev/mcpx/query/jq"
	"github.com/mcpx-dev/mcpx/store"
)

var queryCmd = command{
	name:     "artifacts query",
	brief:    "read part of an artifact: lines, bytes, grep, a JSON path, jq, a PDF page (text or image), an archive entry, an image region",
	synopsis: "[--config FILE] [--store DIR] [--format text|json] [--max-chars N] [--out FILE] ID (--lines A-B | --bytes A-B | --grep REGEX [--context N] | --json PATH | --jq EXPR | --page N [--image] | --entry NAME | --region X,Y,W,H)",
	about: `
Query answers one question about artifact ID without writing all of its
bytes: a window of lines (1-based, inclusive) or bytes (0-based, B
excluded; binary bytes come as a hex dump), the lines a Go regular
expression matches (with line numbers, like grep -n), a gjson path or a jq
program over JSON, a PDF page's text, or an archive member (text inline;
binary, or text over the budget, stored as its own artifact whose id is
printed). Give exactly one of the mode flags.

Two modes answer an image, as artifacts_query does for a client that
takes images: --page N --image renders the PDF page (a scan, a chart),
and --region X,Y,W,H is part of a stored image (W or H 0: to the edge),
each fitted to 1568 px on its longest side and 1 MiB. The image goes to
--out FILE (stdout by default, never a terminal) and what it shows to
stderr.

The answer fits --max-chars characters. When something was cut, a note on
stderr says what, and how to ask for the next part. With --format json the
answer is one JSON object on stdout: text, cut, stored (an ArtifactRef) and total (lines,
bytes, matching lines, results or pages in all).

Exit codes: 0 answered, 1 the query failed (unknown id, a range past the
end, an invalid regex or jq program, over the time or memory budget),
2 bad flags.`,
	example: `
mcpx artifacts query --grep 'button "Submit"' --context 2 playwright_1a2b3c4d5e6f
mcpx artifacts query --lines 181-360 github_9f8e7d6c5b4a
mcpx artifacts query --jq '.items[] | select(.state == "open") | .title' github_9f8e7d6c5b4a
mcpx artifacts query --page 2 tableau_1a2b3c4d5e6f
mcpx artifacts query --page 2 --image --out page2.png tableau_1a2b3c4d5e6f
mcpx artifacts query --region 0,1600,1280,1600 --out part.png playwright_0f1e2d3c4b5a`,
}

// runArtifactsQuery is "mcpx artifacts query".
func (p program) runArtifactsQuery(args []string, stdout, stderr io.Writer) int {
	c := queryCmd
	fs := newFlagSet(c)
	var (
		o                         common
		format                    string
		maxChars                  int
		lines, byteRange, jsonArg string
		region, out               string
		asImage                   bool
		req                       query.Request
	)
	o.register(fs, p.stores)
	fs.StringVar(&format, "format", "text", "write the answer as `text`, or as json: one object {text, cut, stored, total}")
	fs.IntVar(&maxChars, "max-chars", query.DefaultMaxChars, fmt.Sprintf("answer in at most `N` characters (at least %d)", query.MinMaxChars))
	fs.StringVar(&lines, "lines", "", "show lines `A-B` (1-based, inclusive; \"A-\" as many as fit)")
	fs.StringVar(&byteRange, "bytes", "", "show bytes `A-B` (0-based, B excluded); binary as a hex dump")
	fs.StringVar(&req.Grep, "grep", "", "show the lines `REGEX` (Go syntax) matches, numbered")
	fs.IntVar(&req.Context, "context", 0, "with --grep, show `N` lines around each match")
	fs.StringVar(&jsonArg, "json", "", "show the JSON value at the gjson `PATH` (items.#.name)")
	fs.StringVar(&req.JQ, "jq", "", "run the jq program `EXPR` over the JSON artifact")
	fs.IntVar(&req.Page, "page", 0, "show the text of PDF page `N` (from 1)")
	fs.StringVar(&req.Entry, "entry", "", "show the archive member `NAME`")
	fs.BoolVar(&asImage, "image", false, "with --page, render the page as an image (to --out)")
	fs.StringVar(&region, "region", "", "write part `X,Y,W,H` of a stored image, in its pixels (W or H 0: to the edge), as an image (to --out)")
	fs.StringVar(&out, "out", "-", "write an image answer (--image, --region) to `FILE`; - is stdout")
	pos, code := parse(c, fs, args, stdout, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, c, fmt.Errorf("want one artifact ID, got %d arguments", len(pos)))
	}
	req.JSON = jsonArg
	if format != "text" && format != "json" {
		return usageError(stderr, c, fmt.Errorf("--format %q: want text or json", format))
	}
	for _, r := range []struct {
		flag, arg string
		dst       **query.Range
	}{{"--lines", lines, &req.Lines}, {"--bytes", byteRange, &req.Bytes}} {
		if r.arg == "" {
			continue
		}
		rg, err := query.ParseRange(r.arg)
		if err != nil {
			return usageError(stderr, c, fmt.Errorf("%s %q: want A-B, A- or A", r.flag, r.arg))
		}
		*r.dst = &rg
	}
	if region != "" {
		rg, err := parseRegion(region)
		if err != nil {
			return usageError(stderr, c, err)
		}
		req.Region = &rg
	}
	if asImage {
		req.View = query.ViewImage
	}
	if err := checkOneMode(req); err != nil {
		return usageError(stderr, c, err)
	}
	imageOut := req.Region != nil || asImage
	switch {
	case asImage && req.Page == 0:
		return usageError(stderr, c, errors.New("--image goes with --page"))
	case out != "-" && !imageOut:
		return usageError(stderr, c, errors.New("--out goes with --image or --region"))
	case imageOut && out == "-" && format == "json":
		return usageError(stderr, c, errors.New("--format json writes the answer to stdout: give the image --out FILE"))
	case imageOut && out == "-" && isTerminalOut(stdout):
		return usageError(stderr, c, errors.New("the answer is an image: give --out FILE, or redirect stdout"))
	}
	id := pos[0]
	if !store.ValidID(id) {
		return fail(stderr, c, invalidID(id))
	}
	// Only --entry writes: a binary member becomes its own artifact.
	o.readOnly = req.Entry == ""
	ctx := context.Background()
	st, code := o.open(ctx, c, stderr)
	if st == nil {
		return code
	}
	defer st.Close(ctx)

	ref, err := st.Stat(ctx, id)
	if err != nil {
		return fail(stderr, c, describe(err, id, st))
	}
	ans, err := query.Run(ctx, st, ref, req, query.Budget{MaxChars: maxChars, JQ: jq.Run, Memory: membudget.New(0)})
	if err != nil {
		return fail(stderr, c, fmt.Errorf("artifact %s: %w", id, err))
	}
	if ans.Image != nil {
		if err := writeImage(out, stdout, ans.Image.Data); err != nil {
			return fail(stderr, c, err)
		}
		to := out
		if out == "-" {
			to = "stdout"
		}
		if format == "text" {
			fmt.Fprintf(stderr, "mcpx %s: %s, written to %s\n", c.name, ans.Text, to)
			if ans.Cut != "" {
				fmt.Fprintf(stderr, "mcpx %s: %s\n", c.name, oneLine(ans.Cut))
			}
			return exitOK
		}
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(ans); err != nil {
			return fail(stderr, c, fmt.Errorf("write output: %w", err))
		}
		return exitOK
	}
	if ans.Text != "" {
		if _, err := io.WriteString(stdout, strings.TrimSuffix(ans.Text, "\n")+"\n"); err != nil {
			return fail(stderr, c, fmt.Errorf("write output: %w", err))
		}
	}
	if ans.Cut != "" {
		fmt.Fprintf(stderr, "mcpx %s: %s\n", c.name, oneLine(ans.Cut))
	}
	return exitOK
}

// parseRegion reads --region's X,Y,W,H.
func parseRegion(s string) (query.Region, error) {
	parts := strings.Split(s, ",")
	var n [4]int
	if len(parts) != 4 {
		return query.Region{}, fmt.Errorf("--region %q: want X,Y,W,H in pixels", s)
	}
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return query.Region{}, fmt.Errorf("--region %q: want X,Y,W,H in pixels, none negative", s)
		}
		n[i] = v
	}
	return query.Region{X: n[0], Y: n[1], Width: n[2], Height: n[3]}, nil
}

// isTerminalOut reports whether w is a terminal, where an image's bytes
// would make a mess.
func isTerminalOut(w io.Writer) bool {
	r, ok := w.(io.Reader) // an *os.File is both
	return ok && isTerminal(r)
}

// writeImage writes data to the file out, or to stdout for "-".
func writeImage(out string, stdout io.Writer, data []byte) error {
	if out == "-" {
		if _, err := stdout.Write(data); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
		return nil
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return fmt.Errorf("write the image: %w", err)
	}
	return nil
}

// checkOneMode says which mode flags are missing or too many before the
// store is opened; query.Run checks the same.
func checkOneMode(r query.Request) error {
	var set []string
	for _, m := range []struct {
		name string
		on   bool
	}{
		{"--lines", r.Lines != nil}, {"--bytes", r.Bytes != nil}, {"--grep", r.Grep != ""}, {"--json", r.JSON != ""},
		{"--jq", r.JQ != ""}, {"--page", r.Page != 0}, {"--entry", r.Entry != ""}, {"--region", r.Region != nil},
	} {
		if m.on {
			set = append(set, m.name)
		}
	}
	switch {
	case len(set) == 0:
		return errors.New("give one of --lines, --bytes, --grep, --json, --jq, --page, --entry, --region")
	case len(set) > 1:
		return fmt.Errorf("give one mode, not %s", strings.Join(set, " and "))
	case r.Context != 0 && r.Grep == "":
		return errors.New("--context goes with --grep")
	case r.Context < 0 || r.Page < 0:
		return errors.New("--context and --page take positive numbers")
	}
	return nil
}

// Package redact masks secret values (those a config file took from the
// environment through ${VAR}) wherever mcpx prints text: log lines, errors,
// `serve --check` output.
package redact

import (
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// MinLen is the shortest value that is masked: shorter values ("1",
// "on") would mangle every line they appear in and protect nothing.
const MinLen = 4

// Redactor replaces each secret value by "${NAME:masked}", in every form
// the value may take on its way into a message (see Forms). The zero value
// and a nil *Redactor mask nothing. It is safe for concurrent use.
type Redactor struct {
	r *strings.Replacer
}

// New returns a Redactor for secrets, a map from a variable's name to the
// value it had; values shorter than MinLen are left alone.
func New(secrets map[string]string) *Redactor {
	type pair struct{ name, value string }
	var ps []pair
	for name, v := range secrets {
		if len(v) >= MinLen {
			ps = append(ps, pair{name, v})
		}
	}
	if len(ps) == 0 {
		return &Redactor{}
	}
	var enc []pair
	for _, p := range ps {
		for _, f := range Forms(p.value) {
			enc = append(enc, pair{p.name, f})
		}
	}
	ps = enc
	// Longest first, so a secret that contains another (or an encoded
	// form that contains the raw one) is masked whole.
	sort.Slice(ps, func(i, j int) bool {
		if len(ps[i].value) != len(ps[j].value) {
			return len(ps[i].value) > len(ps[j].value)
		}
		return ps[i].name < ps[j].name
	})
	args := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		args = append(args, p.value, "${"+p.name+":masked}")
	}
	return &Redactor{r: strings.NewReplacer(args...)}
}

// Forms returns the distinct forms of secret v that a message may carry:
// v itself; v escaped inside a JSON string (with and without
// encoding/json's HTML escapes) or a Go quoted string (%q, strconv.Quote:
// hclog and url.Error quote values), and each of those escaped once more
// (an error message that quotes JSON, logged as JSON); and its
// percent-encodings (url.QueryEscape, url.PathEscape, and the query form
// with %20 for a space), as a URL built from it carries it.
func Forms(v string) []string {
	escapes := []func(string) string{
		func(s string) string { return jsonInner(s, false) },
		func(s string) string { return jsonInner(s, true) },
		func(s string) string { q := strconv.Quote(s); return q[1 : len(q)-1] },
	}
	forms := []string{v}
	add := func(f string) {
		if f != "" && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	for _, esc := range escapes {
		once := esc(v)
		add(once)
		for _, again := range escapes {
			add(again(once))
		}
	}
	add(url.QueryEscape(v))
	add(url.PathEscape(v))
	add(strings.ReplaceAll(url.QueryEscape(v), "+", "%20"))
	return forms
}

// jsonInner is s as it appears between the quotes of a JSON string.
func jsonInner(s string, escapeHTML bool) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(escapeHTML)
	_ = e.Encode(s)
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}

// String returns s with every secret masked.
func (x *Redactor) String(s string) string {
	if x == nil || x.r == nil {
		return s
	}
	return x.r.Replace(s)
}

// Writer returns a writer that masks secrets in what it passes on to w.
// Each Write is masked on its own: a secret split across two writes is
// not seen, which suits writers that get whole lines (hclog writes each
// log line with one Write).
func (x *Redactor) Writer(w io.Writer) io.Writer {
	if x == nil || x.r == nil {
		return w
	}
	return &writer{x: x, w: w}
}

type writer struct {
	x *Redactor
	w io.Writer
}

func (w *writer) Write(p []byte) (int, error) {
	if _, err := w.x.r.WriteString(w.w, string(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

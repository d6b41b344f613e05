// Package redact masks secret values (those a config file took from the
// environment through ${VAR}) wherever mcpx prints text: log lines, errors,
// `serve --check` output.
package redact

import (
	"io"
	"sort"
	"strings"
)

// MinLen is the shortest value that is masked: shorter values ("1",
// "on") would mangle every line they appear in and protect nothing.
const MinLen = 4

// Redactor replaces each secret value by "${NAME:masked}". The zero value
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
	// Longest first, so a secret that contains another is masked whole.
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

package store

import (
	"strconv"
	"strings"

	"github.com/mcpx-dev/mcpx/store/internal/searchq"
)

// EachLine calls fn with each line of p that holds a letter or digit and
// its place, as Searchers index text: "line N" counted from the part's own
// "line K" place (or from 1 when it has none), "{place}, line N" within
// another place ("page 3, line 5"), and the part's place alone when the
// part is one line. It stops when fn returns false.
func EachLine(p TextPart, fn func(place, line string) bool) {
	first, prefix := 1, p.Place+", "
	if p.Place == "" {
		prefix = ""
	} else if n, ok := strings.CutPrefix(p.Place, "line "); ok {
		if k, err := strconv.Atoi(n); err == nil {
			first, prefix = k, ""
		}
	}
	single := !strings.Contains(strings.TrimRight(p.Text, "\r\n"), "\n")
	text := p.Text
	for i := 0; text != ""; i++ {
		line, rest, _ := strings.Cut(text, "\n")
		text = rest
		if !hasWord(line) {
			continue
		}
		place := prefix + "line " + strconv.Itoa(first+i)
		if single && p.Place != "" {
			place = p.Place
		}
		if !fn(place, strings.TrimRight(line, "\r")) {
			return
		}
	}
}

// hasWord reports whether s holds a letter or digit (a token FTS5 indexes).
func hasWord(s string) bool {
	return strings.IndexFunc(s, searchq.IsTokenRune) >= 0
}

package inspect

// Text, logs, JSON and CSV: one pass over the bytes that counts lines,
// keeps the first characters and the searchable parts, and follows the
// JSON or CSV structure as far as a summary needs (no full parse: a 1 MB
// result costs well under a millisecond more).

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

const (
	// chunkSize is the read size of the pass.
	chunkSize = 64 << 10
	// partSize is the size a text part grows to before it is cut at a
	// line end (or, for a longer line, at a character boundary).
	partSize = 4 << 10
	// maxKeyBytes bounds a JSON key kept for the summary.
	maxKeyBytes = 128
	// maxColumns bounds Summary.Columns.
	maxColumns = 50
)

// inspectText reads text of the given kind (text, json, csv; format tsv
// splits CSV at tabs). With byShape, text shaped as a table is read as CSV
// or TSV (see tableFormat).
func inspectText(r io.ReaderAt, size int64, kind, format string, byShape bool, lim Limits) (Summary, []TextPart, error) {
	s := Summary{Kind: kind, Format: format}
	p := textPass{parts: partCutter{max: lim.MaxTextBytes, line: 1}}
	p.parts.grow(size)
	var js *jsonShape
	var cs *csvCounter
	var csvHead []byte // the first chunk, where the header is
	switch kind {
	case "json":
		js = &jsonShape{}
	case "csv":
		cs = &csvCounter{}
	}
	buf := make([]byte, min(chunkSize, max(size, 1)))
	var off int64
	var last byte
	var err error
	for off < size {
		n, rerr := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		data := buf[:n]
		if off == 0 && byShape && kind == "text" {
			if f := tableFormat(data, int64(n) == size); f != "" {
				kind, format = "csv", f
				s.Kind, s.Format = kind, format
				cs = &csvCounter{}
			}
		}
		if off == 0 {
			p.head = append(p.head, data[:min(len(data), textChars*utf8.UTFMax)]...)
			if cs != nil {
				csvHead = append(csvHead, data...)
			}
		}
		p.newlines += int64(bytes.Count(data, []byte{'\n'}))
		p.parts.add(data)
		if js != nil {
			js.feed(data)
		}
		if cs != nil {
			cs.feed(data)
		}
		if n > 0 {
			last = data[n-1]
		}
		off += int64(n)
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			err = rerr
			break
		}
		if n == 0 {
			break
		}
	}
	s.Lines = p.newlines
	if off > 0 && last != '\n' {
		s.Lines++
	}
	s.Text = firstChars(p.head, textChars)
	parts := p.parts.finish()
	switch {
	case js != nil:
		s.Keys, s.Length, s.ItemKeys = js.keys, js.length(), js.itemKeys
		if js.root == '{' && s.Keys == nil {
			s.Keys = []string{}
		}
	case cs != nil:
		s.Rows = max(cs.records(last, off)-1, 0)
		comma := ','
		if format == "tsv" {
			comma = '\t'
		}
		s.Columns = csvHeader(csvHead, cs.firstRecord, comma)
	}
	return s, parts, err
}

// textPass is what the pass keeps.
type textPass struct {
	head     []byte
	newlines int64
	parts    partCutter
}

// firstChars returns the first n characters of b as valid UTF-8.
func firstChars(b []byte, n int) string {
	i := 0
	for c := 0; c < n && i < len(b); c++ {
		_, sz := utf8.DecodeRune(b[i:])
		if !utf8.FullRune(b[i:]) {
			break
		}
		i += sz
	}
	return strings.ToValidUTF8(string(b[:i]), "\uFFFD")
}

// partCutter splits text into parts of about partSize bytes that start at
// a line, each placed "line N", up to max bytes in all. The kept text is
// copied once, into one string the parts are slices of.
type partCutter struct {
	max   int64
	line  int64 // the line the current part starts at
	text  strings.Builder
	start int   // where the current part starts in text
	lines int64 // newlines in the current part
	ends  []int // where each part ends in text
	first []int64
}

// grow makes room for the n bytes that the parts will keep at most.
func (c *partCutter) grow(n int64) {
	c.text.Grow(int(min(n, c.max)))
}

func (c *partCutter) add(data []byte) {
	for len(data) > 0 && int64(c.text.Len()) < c.max {
		cur := c.text.Len() - c.start
		room := min(partSize-cur, int(c.max-int64(c.text.Len())))
		if len(data) <= room {
			c.keep(data)
			return
		}
		take := data[:room]
		cut := bytes.LastIndexByte(take, '\n') + 1
		if cut == 0 {
			// A line longer than a part: cut at a character boundary.
			cut = room
			for cut > 0 && cut > room-utf8.UTFMax && !utf8.RuneStart(data[cut]) {
				cut--
			}
			if cut == 0 {
				cut = room
			}
		}
		c.keep(data[:cut])
		data = data[cut:]
		c.emit()
	}
}

// keep adds b to the current part.
func (c *partCutter) keep(b []byte) {
	c.text.Write(b)
	c.lines += int64(bytes.Count(b, []byte{'\n'}))
}

// emit ends the current part.
func (c *partCutter) emit() {
	if c.text.Len() == c.start {
		return
	}
	c.ends = append(c.ends, c.text.Len())
	c.first = append(c.first, c.line)
	c.line += c.lines
	c.start, c.lines = c.text.Len(), 0
}

func (c *partCutter) finish() []TextPart {
	c.emit()
	all := c.text.String()
	parts := make([]TextPart, len(c.ends))
	from := 0
	for i, end := range c.ends {
		text := all[from:end]
		if !utf8.ValidString(text) {
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
		parts[i] = TextPart{Place: "line " + strconv.FormatInt(c.first[i], 10), Text: text}
		from = end
	}
	return parts
}

// jsonShape follows a JSON text's structure over chunks: the root's kind,
// an object root's keys, an array root's length and its first item's keys.
// It does not validate: invalid JSON gives whatever it found.
type jsonShape struct {
	root     byte // '{', '[' or 0 until the root starts (another value: 0)
	depth    int
	inStr    bool
	esc      bool // in a string, after a backslash
	expect   bool
	capture  bool
	key      []byte
	keyCut   bool
	items    int  // array root: commas at depth 1
	anyItem  bool // array root: a value seen at depth 1
	itemObj  bool // array root: its first item is an object
	keys     []string
	itemKeys []string
	started  bool // the root value has begun
}

// collecting reports whether a key read now is one the summary lists: the
// root object's members, or the members of an array root's first item.
func (j *jsonShape) collecting() bool {
	switch j.root {
	case '{':
		return j.depth == 1 && len(j.keys) < maxKeys
	case '[':
		return j.depth == 2 && j.items == 0 && j.itemObj && len(j.itemKeys) < maxKeys
	}
	return false
}

func (j *jsonShape) feed(data []byte) {
	if j.root == '{' && len(j.keys) >= maxKeys {
		return // all the summary lists is known
	}
	i := 0
	for i < len(data) {
		if j.inStr {
			seg := i
			for i < len(data) {
				if j.esc {
					j.esc = false
					i++
					continue
				}
				c := data[i]
				if c == '\\' {
					j.esc = true
					i++
					continue
				}
				if c == '"' {
					break
				}
				// Skip to the next quote or backslash: a tight loop for
				// short strings, IndexByte for long ones.
				k, lim := i+1, min(len(data), i+16)
				for k < lim && data[k] != '"' && data[k] != '\\' {
					k++
				}
				if k == lim && lim < len(data) {
					rest := data[k:]
					q := bytes.IndexByte(rest, '"')
					if q < 0 {
						q = len(rest)
					}
					if b := bytes.IndexByte(rest[:q], '\\'); b >= 0 {
						q = b
					}
					k += q
				}
				i = k
			}
			j.keep(data[seg:i])
			if i == len(data) {
				return // the string goes on in the next chunk
			}
			j.inStr = false
			i++
			if j.capture {
				j.endKey()
			}
			continue
		}
		if j.depth >= 2 && !j.collecting() {
			// Inside an item or member whose keys the summary does not
			// list: only strings and nesting matter, so commas, numbers
			// and literals are skipped in the tight loop too.
			for i < len(data) && !jsonNesting[data[i]] {
				i++
			}
			if i == len(data) {
				return
			}
			c := data[i]
			i++
			switch c {
			case '"':
				// A string that ends in this chunk is skipped here;
				// one that goes on is left to the string loop above.
				if end, ok := stringEnd(data, i); ok {
					i = end + 1
					j.expect = false
					continue
				}
				j.inStr, j.esc, j.capture, j.expect = true, false, false, false
			case '{', '[':
				j.depth++
				j.expect = c == '{'
			default: // '}', ']'
				j.depth--
				j.expect = false
			}
			continue
		}
		// Numbers, literals and white space between structural bytes.
		for i < len(data) && !jsonStructural[data[i]] {
			i++
		}
		if i == len(data) {
			return
		}
		c := data[i]
		i++
		item := j.root == '[' && j.depth == 1 && j.started
		switch c {
		case ' ', '\t', '\r', '\n', ':':
			continue
		case '"':
			j.inStr, j.esc = true, false
			j.capture = j.expect && j.collecting()
			j.expect = false
			j.key, j.keyCut = j.key[:0], false
		case '{', '[':
			if !j.started {
				j.started, j.root = true, c
			} else if item && j.items == 0 && c == '{' {
				j.itemObj = true
			}
			j.depth++
			j.expect = c == '{'
		case '}', ']':
			j.depth--
			j.expect = false
			continue
		case ',':
			if item {
				j.items++
			}
			j.expect = true
			continue
		default: // the first byte of a number or literal
			j.started = true // a scalar root, or a scalar in the tree
			j.expect = false
		}
		if item {
			j.anyItem = true
		}
	}
}

// stringEnd returns the index of the quote that ends the string whose
// contents start at data[from], and false when it does not end in data.
func stringEnd(data []byte, from int) (int, bool) {
	for i := from; ; {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return 0, false
		}
		end := i + q
		// The quote is escaped when an odd run of backslashes precedes it.
		n := 0
		for end-1-n >= from && data[end-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return end, true
		}
		i = end + 1
	}
}

// jsonStructural marks the bytes feed stops at outside strings: the
// structural ones, and the first byte of a scalar value (which ends an
// expected key, and starts a scalar root or array item); the rest of a
// number or literal is skipped in a tight loop.
var jsonStructural = func() (t [256]bool) {
	for _, c := range []byte(`"{}[],-0123456789tfn`) {
		t[c] = true
	}
	return t
}()

// jsonNesting marks the bytes feed stops at below the levels it lists:
// a string's start and the brackets.
var jsonNesting = func() (t [256]bool) {
	for _, c := range []byte(`"{}[]`) {
		t[c] = true
	}
	return t
}()

// keep adds string bytes to the key being captured.
func (j *jsonShape) keep(b []byte) {
	if !j.capture || j.keyCut {
		return
	}
	if room := maxKeyBytes - len(j.key); len(b) > room {
		b, j.keyCut = b[:room], true
	}
	j.key = append(j.key, b...)
}

// endKey records the captured key.
func (j *jsonShape) endKey() {
	j.capture = false
	k := string(j.key)
	if bytes.IndexByte(j.key, '\\') >= 0 && !j.keyCut {
		var u string
		if json.Unmarshal([]byte(`"`+k+`"`), &u) == nil {
			k = u
		}
	}
	k = strings.ToValidUTF8(k, "\uFFFD")
	if j.keyCut {
		k += "…"
	}
	if j.root == '{' {
		j.keys = append(j.keys, k)
	} else {
		j.itemKeys = append(j.itemKeys, k)
	}
}

// length is an array root's item count.
func (j *jsonShape) length() int {
	if j.root != '[' || !j.anyItem {
		return 0
	}
	return j.items + 1
}

// csvCounter counts CSV records over chunks: a newline inside quotes is
// part of a field, not a record's end.
type csvCounter struct {
	inQuote     bool
	newlines    int64 // record ends
	firstRecord int   // bytes of the first record, -1 until it ends
	seen        int
}

func (c *csvCounter) feed(data []byte) {
	if c.newlines == 0 && c.firstRecord == 0 {
		c.firstRecord = -1
	}
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		seg := data
		if nl >= 0 {
			seg = data[:nl]
		}
		if bytes.Count(seg, []byte{'"'})%2 == 1 {
			c.inQuote = !c.inQuote
		}
		if nl < 0 {
			c.seen += len(data)
			return
		}
		if !c.inQuote {
			c.newlines++
			if c.firstRecord < 0 {
				c.firstRecord = c.seen + nl + 1
			}
		}
		c.seen += nl + 1
		data = data[nl+1:]
	}
}

// records is the record count of size bytes ending with last.
func (c *csvCounter) records(last byte, size int64) int64 {
	n := c.newlines
	if size > 0 && last != '\n' {
		n++
	}
	return n
}

// csvHeader parses the first record from head (when it ends there).
func csvHeader(head []byte, firstRecord int, comma rune) []string {
	if firstRecord > 0 && firstRecord <= len(head) {
		head = head[:firstRecord]
	}
	head = bytes.TrimPrefix(head, []byte("\ufeff"))
	cr := csv.NewReader(bytes.NewReader(head))
	cr.Comma, cr.LazyQuotes, cr.FieldsPerRecord = comma, true, -1
	rec, err := cr.Read()
	if err != nil && len(rec) == 0 {
		return nil
	}
	if len(rec) > maxColumns {
		rec = append(rec[:maxColumns:maxColumns], "…")
	}
	for i, f := range rec {
		rec[i] = strings.ToValidUTF8(f, "\uFFFD")
	}
	return rec
}

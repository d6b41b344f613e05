package inspect

// CSV and TSV recognised by their shape: a tool that returns a CSV export
// as plain text (no MIME type) would otherwise be summarised as "Text of
// 30,001 lines", with no columns or row count. The test is strict, since
// prose, logs and code also hold commas and tabs: a header of names and a
// field count that holds over the first records.

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode"
)

const (
	// shapeRecords is how many records the shape test reads at most.
	shapeRecords = 50
	// shapeMinRecords is the fewest records it takes: a header and two
	// rows, so that two lines that happen to hold a comma each are not
	// a table.
	shapeMinRecords = 3
	// maxHeaderName bounds a header field: a column name, not a sentence.
	maxHeaderName = 64
)

// tableFormat returns "csv" or "tsv" when the start of a text (all of it
// when whole) is shaped as a table with that delimiter, "" when not.
func tableFormat(start []byte, whole bool) string {
	if !whole {
		// The last record may be cut by the chunk: read whole lines only.
		start = start[:bytes.LastIndexByte(start, '\n')+1]
	}
	start = bytes.TrimPrefix(start, []byte("\ufeff"))
	for _, f := range []struct {
		comma  rune
		format string
	}{{',', "csv"}, {'\t', "tsv"}} {
		if bytes.ContainsRune(start[:bytes.IndexByte(start, '\n')+1], f.comma) && isTable(start, f.comma, whole) {
			return f.format
		}
	}
	return ""
}

// isTable reports whether text reads as records of comma-separated fields
// that all have the header's count, the header being names (see
// headerNames). Where a field starts with a space after its delimiter, as
// prose's commas do, it also wants a column of numbers under a name.
func isTable(text []byte, comma rune, whole bool) bool {
	r := csv.NewReader(bytes.NewReader(text))
	r.Comma = comma
	r.LazyQuotes = comma == '\t' // TSV does not quote; a quote is text
	r.FieldsPerRecord = 0        // the header's count, for every record
	var recs [][]string
	spaced := false
	for len(recs) < shapeRecords {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *csv.ParseError
		if err != nil && !whole && errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrQuote) && len(recs) >= shapeMinRecords {
			break // a quoted field the sample's end cut
		}
		if err != nil {
			return false
		}
		for _, f := range rec[1:] {
			spaced = spaced || strings.HasPrefix(f, " ")
		}
		recs = append(recs, rec)
	}
	if len(recs) < shapeMinRecords || !headerNames(recs[0], comma) {
		return false
	}
	return !spaced || numberColumn(recs)
}

// headerNames reports whether rec reads as column names: two or more,
// each short, with a letter, and none of the characters of code or of a
// key=value log (an unbalanced bracket, =, ;, braces). Only CSV's first
// name may be empty (an index column, as pandas writes it).
func headerNames(rec []string, comma rune) bool {
	if len(rec) < 2 {
		return false
	}
	for i, name := range rec {
		name = strings.TrimSpace(name)
		switch {
		case name == "" && i == 0 && comma == ',' && len(rec) > 2:
			continue
		case name == "", len(name) > maxHeaderName, strings.IndexFunc(name, unicode.IsLetter) < 0,
			strings.ContainsAny(name, "=;{}<>"),
			strings.Count(name, "(") != strings.Count(name, ")"),
			strings.Count(name, "[") != strings.Count(name, "]"):
			return false
		}
	}
	return true
}

// numberColumn reports whether a column holds a name over numbers (or
// blanks) in every row.
func numberColumn(recs [][]string) bool {
	for col := range recs[0] {
		if isNumber(recs[0][col]) {
			continue
		}
		numbers := 0
		for _, rec := range recs[1:] {
			v := strings.TrimSpace(rec[col])
			if v == "" {
				continue
			}
			if !isNumber(v) {
				numbers = -1
				break
			}
			numbers++
		}
		if numbers > 0 {
			return true
		}
	}
	return false
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil
}

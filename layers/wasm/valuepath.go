package wasm

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// The paths host.get_value and host.get_config take are plain paths, not
// gjson paths: a guest must not make the host build values (modifiers such
// as @pretty, pipes, queries, multipaths), since what the host builds is
// outside the guest's memory cap and deadline. The grammar:
//
//	path    = "" | segment *( "." segment )
//	segment = 1*( plain | "\" any-byte )
//	plain   = any byte but "." "\" and the gjson operators
//	          @ * ? | # ! ( ) [ ] { } = < > % , "
//
// A segment names an object member by its (unescaped) key, or an array
// element by a decimal index (no sign, no leading zero). "" is the whole
// document. An operator stays available as a key character when escaped
// ("a\@b"), which is how the request's candidate paths spell such keys.
// The lookup slices the document (gjson's Raw): it never builds a value, so
// its cost is one scan of the document at most, and it checks the call's
// deadline as it goes.

// maxPathBytes bounds a path handed to get_value or get_config.
const maxPathBytes = 4096

// pathOperators are the bytes a segment may hold only when escaped.
const pathOperators = `@*?|#!()[]{}=<>%,"`

// errNotPlainPath: the path uses gjson syntax beyond keys and indexes.
var errNotPlainPath = errors.New("not a plain path")

// parsePlainPath splits a plain path into its unescaped segments.
func parsePlainPath(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if len(p) > maxPathBytes {
		return nil, errNotPlainPath
	}
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 == len(p) {
				return nil, errNotPlainPath // a trailing escape
			}
			i++
			cur.WriteByte(p[i])
		case c == '.':
			if cur.Len() == 0 {
				return nil, errNotPlainPath // "..", a leading or trailing dot
			}
			segs = append(segs, cur.String())
			cur.Reset()
		case strings.IndexByte(pathOperators, c) >= 0:
			return nil, errNotPlainPath
		default:
			cur.WriteByte(c)
		}
	}
	if cur.Len() == 0 {
		return nil, errNotPlainPath
	}
	return append(segs, cur.String()), nil
}

// ctxCheckEvery is how many members or elements a lookup scans between
// looks at the deadline.
const ctxCheckEvery = 1024

// lookupPlain returns the raw JSON of the value at segs in doc, a slice of
// doc itself; ok is false when there is no such value. It stops with
// ctx.Err() once the call's deadline passed.
func lookupPlain(ctx context.Context, doc []byte, segs []string) (raw []byte, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	if len(doc) == 0 {
		return nil, false, nil
	}
	// The document is not modified while a layer runs: view it as a string
	// rather than copy it on every call.
	s := unsafe.String(&doc[0], len(doc))
	cur := gjson.Parse(s)
	scanned := 0
	for _, seg := range segs {
		var next gjson.Result
		found := false
		switch {
		case cur.IsObject():
			cur.ForEach(func(k, v gjson.Result) bool {
				if scanned++; scanned%ctxCheckEvery == 0 && ctx.Err() != nil {
					return false
				}
				if k.String() == seg {
					next, found = v, true
					return false
				}
				return true
			})
		case cur.IsArray():
			idx, perr := strconv.Atoi(seg)
			if perr != nil || idx < 0 || strconv.Itoa(idx) != seg {
				return nil, false, nil
			}
			i := 0
			cur.ForEach(func(_, v gjson.Result) bool {
				if scanned++; scanned%ctxCheckEvery == 0 && ctx.Err() != nil {
					return false
				}
				if i == idx {
					next, found = v, true
					return false
				}
				i++
				return true
			})
		}
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		if !found {
			return nil, false, nil
		}
		cur = next
	}
	if !cur.Exists() || cur.Raw == "" {
		return nil, false, nil
	}
	// cur.Raw is a substring of s, hence of doc: hand back the same bytes.
	off := int(uintptr(unsafe.Pointer(unsafe.StringData(cur.Raw))) - uintptr(unsafe.Pointer(&doc[0])))
	if off < 0 || off+len(cur.Raw) > len(doc) {
		return []byte(cur.Raw), true, nil // not a slice of doc: a copy, as small as the value
	}
	return doc[off : off+len(cur.Raw) : off+len(cur.Raw)], true, nil
}

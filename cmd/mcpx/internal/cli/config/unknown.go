package config

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// unknownKey finds the first object key of data that decoding into a value
// of type t would drop because no field takes it, matching keys to fields
// as encoding/json does (tag name, else field name, case-insensitively;
// embedded structs' fields promoted). data must be valid JSON. It walks the
// document's tokens against t's fields rather than reading the decoder's
// error text, so it also gives the key's dotted path and the offset of its
// opening quote.
func unknownKey(data []byte, t reflect.Type) (unknown, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	w := walker{dec: dec, data: data}
	w.value(t, "")
	return w.unknown, w.found
}

// unknown is a key no field takes.
type unknown struct {
	key  string
	path string // dotted, from the top ("store.bucket")
	off  int64  // of the key's opening quote
}

type walker struct {
	dec     *json.Decoder
	data    []byte
	found   bool
	unknown unknown
}

// value reads one value meant for type t (nil: anything) and looks for
// unknown keys in it.
func (w *walker) value(t reflect.Type, path string) {
	tok, err := w.dec.Token()
	if err != nil || w.found {
		return
	}
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && (t == reflect.TypeFor[json.RawMessage]() || reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]())) {
		t = nil // kept as is, or read by its own UnmarshalJSON: any keys are fine
	}
	switch tok {
	case json.Delim('{'):
		for w.dec.More() && !w.found {
			kt, err := w.dec.Token()
			if err != nil {
				return
			}
			key, _ := kt.(string)
			sub := key
			if path != "" {
				sub = path + "." + key
			}
			var elem reflect.Type
			switch {
			case t == nil:
			case t.Kind() == reflect.Struct:
				f, known := fieldFor(t, key)
				if !known {
					end := w.dec.InputOffset()
					w.found = true
					w.unknown = unknown{key: key, path: sub, off: int64(bytes.LastIndexByte(w.data[:max(end-1, 0)], '"'))}
					return
				}
				elem = f
			case t.Kind() == reflect.Map:
				elem = t.Elem()
			}
			w.value(elem, sub)
		}
		w.dec.Token() // '}'
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; w.dec.More() && !w.found; i++ {
			w.value(elem, path+"."+strconv.Itoa(i))
		}
		w.dec.Token() // ']'
	}
}

// fieldFor returns the type of the field of struct t that key decodes into,
// looking into embedded structs without a tag name as encoding/json does.
func fieldFor(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if typ, ok := fieldFor(ft, key); ok {
					return typ, true
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if strings.EqualFold(name, key) {
			return f.Type, true
		}
	}
	return nil, false
}

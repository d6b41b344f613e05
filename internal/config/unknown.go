package config

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// unknownKey finds the first object key of data that decoding into a value
// of type t rejects as unknown, the way encoding/json matches keys to
// fields (tag name, else field name, case-insensitively). It returns the
// key's dotted path and the offset of its opening quote. data must be valid
// JSON.
func unknownKey(data []byte, t reflect.Type) (path string, off int64, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	w := walker{dec: dec, data: data}
	w.value(t, "")
	return w.path, w.off, w.found
}

type walker struct {
	dec   *json.Decoder
	data  []byte
	found bool
	path  string
	off   int64
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
	if t == reflect.TypeFor[json.RawMessage]() {
		t = nil // kept as is: any keys are fine
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
					w.found, w.path = true, sub
					end := w.dec.InputOffset()
					w.off = int64(bytes.LastIndexByte(w.data[:max(end-1, 0)], '"'))
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

// fieldFor returns the type of the field of struct t that key decodes into.
func fieldFor(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
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

package jsonwalk

// Span is a value's place in a buffer: [Off, End) and its kind.
type Span struct {
	Off, End int
	Kind     Kind
}

// Field is one member of an object: its unescaped key and its value's span.
type Field struct {
	Key string
	Span
}

// Object is the members of one JSON object in document order. A slice, not
// a map: most objects have a handful of members, and a map per lookup cost
// more than the linear search.
type Object []Field

// Get returns the span of the first member named key.
func (o Object) Get(key string) (Span, bool) {
	for _, f := range o {
		if f.Key == key {
			return f.Span, true
		}
	}
	return Span{}, false
}

// Members lists the members of the object starting at raw[obj] in one pass,
// for callers that look up several keys of one object: a member may be a
// 10 MB string that each Member call would skip again. raw must be valid
// JSON (strings are skipped, not checked); nil when raw[obj] is no object.
func Members(raw []byte, obj int) Object {
	if obj < 0 || obj >= len(raw) || raw[obj] != '{' {
		return nil
	}
	var o Object
	_ = WalkValidated(raw[obj:], func(v *Visit) Step {
		switch {
		case len(v.Path) == 0:
			if v.Leave {
				return Stop
			}
			return Descend
		case v.Leave:
			o[len(o)-1].End = obj + v.End
			return Descend
		}
		o = append(o, Field{v.Path[0].KeyString(), Span{obj + v.Off, obj + v.End, v.Kind}})
		return SkipValue
	})
	return o
}

// Member finds the value of key in the object starting at raw[obj] without
// copying (a sibling may be a 10 MB string that gjson would copy). raw must
// be valid JSON, as every buffer of an engine Doc is: strings are skipped,
// not checked.
func Member(raw []byte, obj int, key string) (Span, bool) {
	if obj < 0 || obj >= len(raw) || raw[obj] != '{' {
		return Span{}, false
	}
	var sp Span
	ok := false
	_ = WalkValidated(raw[obj:], func(v *Visit) Step {
		if v.Leave || len(v.Path) == 0 {
			return Descend
		}
		if len(v.Path) == 1 && v.Path[0].KeyIs(key) {
			sp, ok = Span{obj + v.Off, obj + v.End, v.Kind}, true
			if v.End < 0 {
				e, err := SkipContainer(raw, obj+v.Off)
				if err != nil {
					ok = false
				}
				sp.End = e
			}
			return Stop
		}
		return SkipValue
	})
	return sp, ok
}

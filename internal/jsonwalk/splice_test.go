package jsonwalk

import (
	"bytes"
	"errors"
	"testing"
)

func TestSplice(t *testing.T) {
	raw := []byte("0123456789")
	out, err := Splice(raw, []Edit{{Off: 8, Len: 2, With: []byte("X")}, {Off: 0, Len: 1, With: []byte("AB")}, {Off: 5, Len: 0, With: []byte("-")}})
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "AB1234-567X" {
		t.Fatalf("got %q", out)
	}
	if string(raw) != "0123456789" {
		t.Fatal("input modified")
	}
	if _, err := Splice(raw, []Edit{{Off: 2, Len: 3}, {Off: 4, Len: 1}}); !errors.Is(err, ErrOverlap) {
		t.Fatalf("overlap: %v", err)
	}
	if _, err := Splice(raw, []Edit{{Off: 9, Len: 2}}); err == nil {
		t.Fatal("out of range accepted")
	}
}

// FuzzSplice checks Splice against a naive reference: same output, and
// overlaps rejected.
func FuzzSplice(f *testing.F) {
	f.Add([]byte("hello world"), uint8(0), uint8(5), []byte("HEY"), uint8(6), uint8(5), []byte("there"))
	f.Add([]byte("abc"), uint8(1), uint8(1), []byte(""), uint8(1), uint8(0), []byte("x"))
	f.Fuzz(func(t *testing.T, raw []byte, o1, l1 uint8, w1 []byte, o2, l2 uint8, w2 []byte) {
		a := Edit{Off: int(o1), Len: int(l1), With: w1}
		b := Edit{Off: int(o2), Len: int(l2), With: w2}
		out, err := Splice(raw, []Edit{a, b})
		inRange := func(e Edit) bool { return e.Off+e.Len <= len(raw) }
		if !inRange(a) || !inRange(b) {
			if err == nil {
				t.Fatal("out-of-range edit accepted")
			}
			return
		}
		if b.Off < a.Off || (b.Off == a.Off && b.Len == 0 && a.Len != 0) {
			a, b = b, a
		}
		overlap := b.Off < a.Off+a.Len || (a.Off == b.Off && a.Len == 0 && b.Len == 0)
		if overlap {
			if !errors.Is(err, ErrOverlap) {
				t.Fatalf("overlap not rejected: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		want = append(want, raw[:a.Off]...)
		want = append(want, a.With...)
		want = append(want, raw[a.Off+a.Len:b.Off]...)
		want = append(want, b.With...)
		want = append(want, raw[b.Off+b.Len:]...)
		if !bytes.Equal(out, want) {
			t.Fatalf("got %q want %q", out, want)
		}
	})
}

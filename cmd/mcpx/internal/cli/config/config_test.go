package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr []string // substrings of the error; nil: no error
		check   func(t *testing.T, f File)
	}{
		{name: "empty object is the defaults", in: `{}`, check: func(t *testing.T, f File) {
			if f.Log.Level != DefaultLogLevel || f.Store.Dir != "" || f.Pipeline.Chain != nil {
				t.Errorf("got %+v, want Default()", f)
			}
		}},
		{name: "all sections", in: `{"store": {"dir": "/srv/a"}, "log": {"level": "debug"},
			"pipeline": {"layers": {"sizenet": {"max_inline_size": 5}}, "servers": {"tableau": {"tools": {"t": {"layers": {"fields": {}}}}}}}}`,
			check: func(t *testing.T, f File) {
				if f.Store.Dir != "/srv/a" || f.Log.Level != "debug" {
					t.Errorf("got %+v", f)
				}
				if got := string(f.Pipeline.Layers["sizenet"]); got != `{"max_inline_size": 5}` {
					t.Errorf("sizenet options %s", got)
				}
				if _, ok := f.Pipeline.Servers["tableau"].Tools["t"].Layers["fields"]; !ok {
					t.Error("per-tool options lost")
				}
			}},
		{name: "level is case-insensitive", in: `{"log": {"level": "WARN"}}`},
		{name: "missing level keeps the default", in: `{"log": {}}`, check: func(t *testing.T, f File) {
			if f.Log.Level != DefaultLogLevel {
				t.Errorf("level %q, want %q", f.Log.Level, DefaultLogLevel)
			}
		}},
		{name: "empty", in: " \n", wantErr: []string{"empty file"}},
		{name: "not an object", in: `[]`, wantErr: []string{"line 1, column 1 (offset 0)", "cannot unmarshal array"}},
		{name: "syntax error", in: "{\n  \"log\": {\"level\": \"info\",}\n}", wantErr: []string{"line 2, column 27 (offset 28)", "invalid character '}'"}},
		{name: "truncated", in: `{"log": {`, wantErr: []string{"offset 9", "unexpected EOF"}},
		{name: "unknown top-level key", in: "{\n  \"upstreams\": {}\n}", wantErr: []string{"line 2, column 3 (offset 4)", "upstreams", `unknown field "upstreams"`}},
		{name: "unknown nested key", in: `{"store": {"dir": "x", "bucket": "y"}}`, wantErr: []string{"offset 23", "store.bucket"}},
		{name: "unknown key under a map", in: `{"pipeline": {"servers": {"gh": {"layer": {}}}}}`, wantErr: []string{"offset 33", "pipeline.servers.gh.layer"}},
		{name: "layer options are the engine's to check", in: `{"pipeline": {"layers": {"sizenet": {"anything": [1]}}}}`},
		{name: "wrong type", in: `{"pipeline": {"max_artifact_bytes": "1GB"}}`, wantErr: []string{"line 1, column 37 (offset 36)", "pipeline.max_artifact_bytes", "int64"}},
		{name: "wrong type, number", in: `{"log": {"level": 3}}`, wantErr: []string{"line 1, column 19 (offset 18)", "log.level", "string"}},
		{name: "wrong type, object", in: `{"store": []}`, wantErr: []string{"line 1, column 11 (offset 10)", "store"}},
		{name: "trailing data", in: "{}\n{}", wantErr: []string{"line 2, column 1 (offset 3)", "data after the top-level object"}},
		{name: "bad level", in: `{"log": {"level": "loud"}}`, wantErr: []string{"log.level", `"loud" is not a log level`, "trace, debug, info, warn, error, off"}},
		{name: "s3 timeouts and presigned URLs", in: `{"store": {"s3": {"bucket": "b", "put_timeout": "30s", "orphan_grace": 7200, "presign_urls": true}}, "serve": {"url_ttl": "1h"}}`,
			check: func(t *testing.T, f File) {
				if c := f.Store.S3; time.Duration(c.PutTimeout) != 30*time.Second || time.Duration(c.OrphanGrace) != 2*time.Hour || !c.PresignURLs {
					t.Errorf("store.s3 %+v", c)
				}
			}},
		{name: "s3 defaults", in: `{"store": {"s3": {"bucket": "b"}}}`, check: func(t *testing.T, f File) {
			if c := f.Store.S3; c.PutTimeout != 0 || c.OrphanGrace != 0 || c.PresignURLs {
				t.Errorf("store.s3 %+v: want the store's defaults (zero)", c)
			}
		}},
		{name: "negative put timeout", in: `{"store": {"s3": {"bucket": "b", "put_timeout": "-1s"}}}`, wantErr: []string{"store.s3.put_timeout"}},
		{name: "presigned URLs past S3's limit", in: `{"store": {"s3": {"bucket": "b", "presign_urls": true}}, "serve": {"url_ttl": "200h"}}`,
			wantErr: []string{"serve.url_ttl", "store.s3.presign_urls", "168h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Decode([]byte(tt.in))
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tt.check != nil {
					tt.check(t, f)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want one containing %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("relative store dir", func(t *testing.T) {
		f, err := Load(write("rel.json", `{"store": {"dir": "data/artifacts"}}`))
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, "data", "artifacts"); f.Store.Dir != want {
			t.Errorf("store.dir %q, want %q (relative to the file)", f.Store.Dir, want)
		}
	})
	t.Run("absolute store dir", func(t *testing.T) {
		f, err := Load(write("abs.json", `{"store": {"dir": "/srv/mcpx"}}`))
		if err != nil || f.Store.Dir != "/srv/mcpx" {
			t.Errorf("store.dir %q (%v), want /srv/mcpx", f.Store.Dir, err)
		}
	})
	t.Run("errors name the file", func(t *testing.T) {
		p := write("bad.json", `{"log": 1}`)
		_, err := Load(p)
		if err == nil || !strings.HasPrefix(err.Error(), "config "+p+": ") {
			t.Errorf("error %v, want it to start with the file's name", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		p := filepath.Join(dir, "nope.json")
		_, err := Load(p)
		if err == nil || !os.IsNotExist(unwrapAll(err)) || !strings.Contains(err.Error(), p) {
			t.Errorf("error %v, want a not-exist error naming %s", err, p)
		}
	})
}

// TestDefaultRoundTrip checks that Default encodes to a file Decode takes
// back unchanged.
func TestDefaultRoundTrip(t *testing.T) {
	b, err := json.Marshal(Default())
	if err != nil {
		t.Fatal(err)
	}
	f, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(%s): %v", b, err)
	}
	if f.Log != Default().Log || f.Store != Default().Store {
		t.Errorf("round trip gave %+v, want %+v", f, Default())
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}

// FuzzDecode checks that Decode never panics, that every error it returns
// carries a position, and that what it accepts survives a round trip.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"log": {"level": "info"}}`, `{"store": {"dir": "x", "bucket": 1}}`,
		`{"pipeline": {"servers": {"a*": {"tools": {"t": {"layers": {"fields": {"rules": [{"path": "p"}]}}}}}}}}`,
		`{"pipeline": {"servers": {"gh": {"layer": {}}}}}`, `{"log": {"level": 3}}`, "{}\n[]", `{"a\"b": 1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data)
		if err != nil {
			if msg := err.Error(); !strings.Contains(msg, "offset") && !strings.HasPrefix(msg, "empty file") && !strings.HasPrefix(msg, "log.level") {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		b, err := json.Marshal(file)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if _, err := Decode(b); err != nil {
			t.Fatalf("Decode(Marshal(Decode(%q))) = %v", data, err)
		}
	})
}

func TestRetention(t *testing.T) {
	f, err := Decode([]byte(`{"store": {"dir": "x"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Store.Retention != nil || f.Store.RetentionFor(false) != (store.Retention{}) || f.Store.RetentionFor(true) != store.DefaultRetention() {
		t.Errorf("no section: %+v", f.Store.Retention)
	}
	f, err = Decode([]byte(`{"store": {"retention": {"ttl": "2h", "max_bytes": 1000, "max_trace_bytes": 0, "strategy": "fifo", "drop_on_session_end": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := store.DefaultRetention()
	want.TTL, want.MaxBytes, want.MaxTraceBytes, want.Strategy, want.DropOnSessionEnd = store.Duration(2*time.Hour), 1000, 0, store.StrategyFIFO, true
	if got := f.Store.RetentionFor(false); got != want {
		t.Errorf("section over the defaults: %+v, want %+v", got, want)
	}
	for _, bad := range []string{
		`{"store": {"retention": {"strategy": "random"}}}`,
		`{"store": {"retention": {"ttl": "soon"}}}`,
		`{"store": {"retention": {"max_bytes": -1}}}`,
		`{"store": {"retention": {"max_byte": 1}}}`,
	} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// Package config is mcpx's configuration file: the data it holds, its
// defaults, and a strict loader. It has no behaviour of its own; the CLI
// turns a File into a store, an engine and a logger.
//
// A file is one JSON object. Every section is optional and every key is
// checked: an unknown key is an error, so a typo never silently does
// nothing.
//
//	{
//	  "store":    {"dir": "/var/lib/mcpx/artifacts"},
//	  "pipeline": {"layers": {"sizenet": {"max_inline_size": 20000}}},
//	  "log":      {"level": "info"}
//	}
//
// An error names the file, the line, the column and the key's path. Every
// path in the file (store.dir, the custom layer's dir and plugins, an
// upstream's cwd and a command such as ./bin/server) is relative to the
// file's folder, whichever folder mcpx starts in. Strings in mcpServers
// and serve may use ${VAR} and ${VAR:-default}; values taken from the
// environment are masked wherever mcpx prints them. Durations are strings
// ("30s", "15m") or a number of seconds. Each key's comment says what it
// is when it is left out.
//
// New sections are new fields of File; existing files stay valid.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/mcpx-dev/mcpx/engine"
	gatewayconfig "github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/store"
)

// File is the content of a configuration file.
type File struct {
	// Store says where artifacts are kept.
	Store Store `json:"store"`
	// Pipeline configures the layer chain: which layers run, in what order,
	// with what options, per server and per tool. See engine.Config. The
	// zero value runs every built-in layer with its defaults.
	Pipeline engine.Config `json:"pipeline"`
	// Log configures mcpx's own log output (stderr).
	Log Log `json:"log"`
	// MCPServers are the upstream MCP servers of "mcpx serve", in Claude
	// Desktop's shape ("command"/"args"/"env"/"cwd", or "url"/"headers"/
	// "type") plus "timeout", "disabled" and mcpx's own "mcpx" section.
	// Strings may use ${VAR} and ${VAR:-default}. See gatewayconfig.ServerConfig.
	MCPServers map[string]gatewayconfig.ServerConfig `json:"mcpServers,omitempty"`
	// Serve configures the gateway's HTTP surface (mcpx serve --listen).
	Serve Serve `json:"serve"`
}

// Store configures the artifact store.
type Store struct {
	// Dir is the folder of the file-system store. A relative path is taken
	// relative to the folder of the configuration file, as every path in
	// the file is. Defaults to ""
	// (the default folder: $MCPX_HOME/artifacts, else
	// $XDG_DATA_HOME/mcpx/artifacts, else ~/.local/share/mcpx/artifacts).
	Dir string `json:"dir,omitempty"`
	// Retention says what the store keeps and for how long (docs/design.md, "The
	// store's promises"): see
	// store.Retention for each field and its default. A section that is
	// present is decoded over the default policy (store.DefaultRetention:
	// ttl 1h, max_artifact_bytes 50 MB, max_session_bytes 500 MB,
	// max_trace_bytes 100 MB, max_artifacts_per_trace 100,
	// max_artifacts_per_session 1000, max_user_bytes 1 GiB,
	// max_artifacts_per_user 2000, strategy lru, no max_bytes), so
	// {"ttl": "2h"} changes the TTL only; set a limit to 0 to turn it off.
	// Without the section (nil) mcpx serve and mcpx wrap apply those
	// defaults and the CLI (transform, artifacts gc) applies none. See
	// RetentionFor.
	Retention *store.Retention `json:"retention,omitempty"`
	// S3 keeps artifacts in an S3 bucket instead of a folder, so that
	// several replicas share them (see S3). Give dir or s3, not both.
	// Defaults to nil (the file-system store).
	S3 *S3 `json:"s3,omitempty"`
}

// S3 configures the S3 store (store/s3store): every mcpx that names the
// same bucket and prefix sees the same artifacts.
//
//	"store": {"s3": {"endpoint": "http://127.0.0.1:7070", "bucket": "mcpx", "path_style": true}}
type S3 struct {
	// Endpoint is the server's URL ("https://s3.eu-west-1.amazonaws.com",
	// "http://127.0.0.1:7070"). Defaults to $AWS_ENDPOINT_URL, else
	// https://s3.amazonaws.com.
	Endpoint string `json:"endpoint,omitempty"`
	// Bucket holds the artifacts; it must exist (mcpx does not create
	// it). Required.
	Bucket string `json:"bucket"`
	// Region is the bucket's region. Defaults to $AWS_REGION, else
	// $AWS_DEFAULT_REGION, else what the server says.
	Region string `json:"region,omitempty"`
	// Prefix goes before every key, so one bucket holds several stores.
	// Defaults to "" (the bucket's root).
	Prefix string `json:"prefix,omitempty"`
	// PathStyle addresses the bucket as endpoint/bucket (MinIO,
	// versitygw, Ceph). Defaults to false (detected from the endpoint).
	PathStyle bool `json:"path_style,omitempty"`
	// AccessKey signs requests. Defaults to $AWS_ACCESS_KEY_ID.
	AccessKey string `json:"access_key,omitempty"`
	// SecretKey signs requests. Defaults to $AWS_SECRET_ACCESS_KEY (with
	// $AWS_SESSION_TOKEN when set).
	SecretKey string `json:"secret_key,omitempty"`
	// PutTimeout bounds storing one artifact, upload and records ("2m"):
	// a slower object store fails the put, and the model gets the value
	// as the server sent it with a note saying it was not stored.
	// Defaults to s3store.DefaultPutTimeout (2m).
	PutTimeout store.Duration `json:"put_timeout,omitempty"`
	// OrphanGrace is how old an object no artifact names (what a killed
	// put left) must be before a collection removes it, and an
	// unfinished multipart upload before it is aborted. It must exceed
	// any put in progress on any replica (PutTimeout, at least).
	// Defaults to s3store.DefaultOrphanGrace (1h).
	OrphanGrace store.Duration `json:"orphan_grace,omitempty"`
	// PresignURLs makes the "url" of the artifact refs in results (and
	// resources) a presigned GET of the object itself, valid for
	// serve.url_ttl (at most 7 days), so downloads go straight to the
	// object store rather than through mcpx, with or without --listen;
	// the endpoint must then be reachable by whoever follows the links.
	// A URL that cannot be presigned falls back to the gateway's; the
	// HTTP API's own refs (GET /artifacts/{id}/meta, the UI) keep the
	// gateway's. Defaults to false (the gateway's signed /artifacts URL).
	PresignURLs bool `json:"presign_urls,omitempty"`
}

// Backend returns the kind and the JSON of the store section that names a
// backend other than a folder (store.s3), for store.Backends' Lookup;
// kind is "" for the file-system store.
func (s Store) Backend() (kind string, section json.RawMessage, err error) {
	if s.S3 == nil {
		return "", nil, nil
	}
	if section, err = json.Marshal(s.S3); err != nil {
		return "", nil, fmt.Errorf("store.s3: %w", err)
	}
	return "s3", section, nil
}

// MaxPresignExpiry is the longest a presigned URL may stay valid (S3's
// limit for signature version 4).
const MaxPresignExpiry = 7 * 24 * time.Hour

// RetentionFor returns the retention policy in force: the configured one,
// else the default policy for the gateway (mcpx serve, wrap), else none
// (the zero policy keeps everything) for the CLI.
func (s Store) RetentionFor(gateway bool) store.Retention {
	switch {
	case s.Retention != nil:
		return *s.Retention
	case gateway:
		return store.DefaultRetention()
	}
	return store.Retention{}
}

// Log configures logging.
type Log struct {
	// Level is the least severe level written: "trace", "debug", "info",
	// "warn", "error" or "off". The MCPX_LOG_LEVEL environment variable,
	// when set, overrides it. Defaults to DefaultLogLevel.
	Level string `json:"level,omitempty"`
}

// DefaultLogLevel is the log level when neither the file nor MCPX_LOG_LEVEL
// sets one: quiet enough that mcpx in a shell pipeline writes to stderr only
// when something went wrong.
const DefaultLogLevel = "warn"

// logLevels are the values Log.Level accepts, least severe first.
var logLevels = []string{"trace", "debug", "info", "warn", "error", "off"}

// Default returns the configuration used when there is no file, and the
// base every loaded file is decoded over: every default lives here.
func Default() File {
	return File{Log: Log{Level: DefaultLogLevel}}
}

// Load reads and decodes the configuration file at path over Default, then
// checks it (see Decode). Every relative path in it (store.dir, the custom
// layer's dir and plugins, an upstream's cwd and command) is resolved
// against the file's folder, so the file means the same whichever folder
// mcpx starts in; paths.go lists them.
//
// # Errors
//
// Every error names the file. Syntax errors, unknown keys and values of the
// wrong type also give the line, column and byte offset, and the key's
// path where known ("pipeline.max_artifact_bytes").
func Load(path string) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("config: %w", err)
	}
	f, err := Decode(data)
	if err != nil {
		return File{}, fmt.Errorf("config %s: %w", path, err)
	}
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return File{}, fmt.Errorf("config %s: %w", path, err)
	}
	if err := f.resolvePaths(base); err != nil {
		return File{}, fmt.Errorf("config %s: %w", path, err)
	}
	return f, nil
}

// Decode decodes one JSON object over Default, strictly: unknown keys (an
// *UnknownKeyError), trailing data and values of the wrong type are errors. It then checks the
// values it can check without building anything (Log.Level); layer options
// are checked by engine.New and Engine.Validate.
func Decode(data []byte) (File, error) {
	f := Default()
	// A retention section is read over the default policy; its absence is
	// told apart below.
	f.Store.Retention = new(store.Retention)
	*f.Store.Retention = store.DefaultRetention()
	if len(bytes.TrimSpace(data)) == 0 {
		return File{}, errors.New("empty file: want a JSON object such as {}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	decErr := dec.Decode(&f)
	if decErr != nil && !json.Valid(data) {
		return File{}, locate(data, dec.InputOffset(), decErr)
	}
	// Unknown keys are found by walking the document against File's
	// fields; the first one wins over a later value of the wrong type, as
	// it would reading the file top to bottom.
	if u, ok := unknownKey(data, reflect.TypeFor[File]()); ok && (decErr == nil || before(u.off, decErr)) {
		return File{}, fmt.Errorf("%s: %s: %w", position(data, u.off), u.path, &UnknownKeyError{Key: u.key})
	}
	if decErr != nil {
		return File{}, locate(data, dec.InputOffset(), decErr)
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		off := int64(len(data) - len(rest))
		return File{}, fmt.Errorf("%s: data after the top-level object", position(data, off))
	}
	if err := CheckLevel(f.Log.Level); err != nil {
		return File{}, fmt.Errorf("log.level: %w", err)
	}
	var probe struct {
		Store struct {
			Retention json.RawMessage `json:"retention"`
		} `json:"store"`
	}
	if json.Unmarshal(data, &probe) == nil && (len(probe.Store.Retention) == 0 || string(probe.Store.Retention) == "null") {
		f.Store.Retention = nil
	} else if err := f.Store.Retention.Check(); err != nil {
		return File{}, fmt.Errorf("store.retention: %w", err)
	}
	if f.Store.S3 != nil {
		switch {
		case f.Store.S3.Bucket == "":
			return File{}, errors.New("store.s3.bucket: required")
		case f.Store.Dir != "":
			return File{}, errors.New("store: give dir or s3, not both")
		case f.Store.S3.PutTimeout < 0:
			return File{}, errors.New("store.s3.put_timeout: must not be negative")
		case f.Store.S3.OrphanGrace < 0:
			return File{}, errors.New("store.s3.orphan_grace: must not be negative")
		case f.Store.S3.PresignURLs && f.Serve.TTL() > MaxPresignExpiry:
			return File{}, fmt.Errorf("serve.url_ttl %s: a presigned URL (store.s3.presign_urls) is valid for at most %s", f.Serve.TTL(), MaxPresignExpiry)
		}
	}
	if err := f.expandAndCheck(os.LookupEnv); err != nil {
		return File{}, err
	}
	return f, nil
}

// CheckLevel returns an error unless s is one of the levels Log.Level documents (in any case).
// The CLI checks MCPX_LOG_LEVEL with it too.
func CheckLevel(s string) error {
	for _, l := range logLevels {
		if strings.EqualFold(s, l) {
			return nil
		}
	}
	return fmt.Errorf("%q is not a log level; want one of %s", s, strings.Join(logLevels, ", "))
}

// UnknownKeyError is a key that no field of the configuration takes: a
// typo that would otherwise silently do nothing.
type UnknownKeyError struct {
	// Key is the key as written.
	Key string
}

func (e *UnknownKeyError) Error() string { return fmt.Sprintf("unknown field %q", e.Key) }

// before reports whether the unknown key at off comes before the value
// decoding err is about; an error without a position (a value's own
// UnmarshalJSON) comes after.
func before(off int64, err error) bool {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return off < typ.Offset
	}
	return true
}

// locate adds the line, column and offset of a decoding error: the offset
// the error carries (syntax and type errors), else where the decoder
// stopped.
func locate(data []byte, stopped int64, err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	off := stopped
	switch {
	case errors.As(err, &syn):
		off = syn.Offset - 1 // the offending byte
	case errors.As(err, &typ):
		off = valueStart(data, typ.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = int64(len(data))
	}
	return fmt.Errorf("%s: %w", position(data, off), err)
}

// valueStart returns the offset of the value that a type error reported at
// end (just past a scalar, or just past an array's or object's opening
// bracket) is about.
func valueStart(data []byte, end int64) int64 {
	if end <= 0 || end > int64(len(data)) {
		return end
	}
	i := end - 1
	switch data[i] {
	case '[', '{':
		return i
	case '"':
		for i--; i >= 0; i-- {
			if data[i] == '"' && (i == 0 || data[i-1] != '\\') {
				return i
			}
		}
		return end
	}
	for i > 0 && strings.IndexByte("+-.0123456789Eaeflnrstu", data[i-1]) >= 0 {
		i--
	}
	return i
}

// position renders a byte offset as "line L, column C (offset N)", counting
// columns in bytes from 1.
func position(data []byte, off int64) string {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d (offset %d)", line, col, off)
}

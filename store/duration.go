package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration as the whole config tree writes one: in
// JSON a Go duration string ("1h30m", "30s"), or a bare number of
// seconds. Every duration of mcpx's configuration (retention, the
// gateway's timeouts and limits, the HTTP API's, the access rules') is
// one, so all read the same.
type Duration time.Duration

// MarshalJSON writes d as a duration string ("30s").
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	var secs float64
	if err := json.Unmarshal(b, &secs); err != nil {
		return fmt.Errorf("duration: want \"30s\" or a number of seconds, got %s", b)
	}
	*d = Duration(secs * float64(time.Second))
	return nil
}

// String renders d as time.Duration does ("30s").
func (d Duration) String() string { return time.Duration(d).String() }

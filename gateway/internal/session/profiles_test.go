package session

import (
	"testing"

	"github.com/mcpx-dev/mcpx/gateway/config"
	"github.com/mcpx-dev/mcpx/imageview"
)

// Profiles match clientInfo.name case-insensitively by prefix, the
// longest first; config replaces a built-in and sets "default".
func TestProfilesMatch(t *testing.T) {
	p, err := NewProfiles(map[string]config.Profile{"goose": {MaxChars: 8000}, "default": {MaxChars: 30000}, "claude-code-ci": {MaxChars: 4000}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		client, profile string
		chars           int
		images          bool
	}{
		{"claude-code", "claude-code", 87500, true},
		{"Claude-Code-CI", "claude-code-ci", 4000, false},
		{"goose", "goose", 8000, false},
		{"GitHub-Copilot-CLI", "github-copilot", 10000, false},
		{"copilot", "copilot", 10000, false},
		{"", "default", 30000, false},
		{"inspector", "default", 30000, false},
	} {
		v := p.view(c.client)
		if v.Profile != c.profile || v.MaxObservationChars != c.chars || v.Images != c.images {
			t.Errorf("%q: got %+v, want profile %s chars %d images %v", c.client, v, c.profile, c.chars, c.images)
		}
	}
	if _, err := NewProfiles(map[string]config.Profile{"x": {MaxChars: -1}}); err == nil {
		t.Error("a negative budget was accepted")
	}
	_, err = NewProfiles(map[string]config.Profile{"x": {Images: true, ImageView: imageview.Limits{MaxWaitMS: -1}}})
	if want := `profiles: "x": image_view.max_wait_ms must not be negative`; err == nil || err.Error() != want {
		t.Errorf("a negative image_view bound: %v, want %s", err, want)
	}
}

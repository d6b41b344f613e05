package auth

import (
	"encoding/json"
	"net/http"
)

// MetadataPath is where the protected-resource metadata is served (RFC
// 9728 section 3, as the MCP authorization spec asks).
const MetadataPath = "/.well-known/oauth-protected-resource"

// MetadataURL is the metadata's absolute URL, for WWW-Authenticate.
func (a *Authenticator) MetadataURL() string { return a.resource + MetadataPath }

// Metadata is the protected-resource metadata document.
type Metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// Metadata returns the document MetadataHandler serves.
func (a *Authenticator) Metadata() Metadata {
	as := a.c.AuthorizationServers
	if len(as) == 0 && a.c.JWT != nil {
		as = []string{a.c.JWT.Issuer}
	}
	return Metadata{Resource: a.resource, AuthorizationServers: as, BearerMethodsSupported: []string{"header"}, ResourceName: "mcpx"}
}

// MetadataHandler serves the metadata to anyone (clients read it before
// they have a token). Mount it at MetadataPath and MetadataPath+"/{path...}"
// (the form a client builds for a resource with a path, such as /mcp).
func (a *Authenticator) MetadataHandler() http.Handler {
	return a.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		_ = json.NewEncoder(w).Encode(a.Metadata())
	}))
}

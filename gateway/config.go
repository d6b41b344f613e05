package gateway

import config "github.com/mcpx-dev/mcpx/internal/gatewayconfig"

// The configuration a host gives New, in the config file's shape: an
// mcpServers entry (ServerConfig, with mcpx's own section ServerOptions,
// per-tool ToolOptions and ArgumentOptions, and Roots), the gateway's
// Limits, and Duration, which reads "30s" or seconds. Their fields and
// defaults are documented in internal/gatewayconfig, which the upstream
// supervisor and the CLI's config read too.
type (
	ServerConfig    = config.ServerConfig
	ServerOptions   = config.ServerOptions
	ToolOptions     = config.ToolOptions
	ArgumentOptions = config.ArgumentOptions
	Root            = config.Root
	Limits          = config.Limits
	Duration        = config.Duration
	// ArtifactToolsOptions configure the artifacts_query and
	// artifacts_search tools (Options.ArtifactTools).
	ArtifactToolsOptions = config.ArtifactToolsOptions
	// Users says who may call the gateway (Options.Users).
	Users = config.Users
	// Profile is what a client takes (Options.Profiles).
	Profile = config.Profile
)

package wasm

import (
	"errors"
	"fmt"
)

// Sentinels a caller matches with errors.Is on a *PluginError.
var (
	// ErrTimeout: the call ran past its deadline and was stopped.
	ErrTimeout = errors.New("deadline exceeded")
	// ErrTrap: the guest trapped, panicked or exited.
	ErrTrap = errors.New("guest trapped")
	// ErrMemoryLimit: the guest ran out of its memory cap.
	ErrMemoryLimit = errors.New("memory limit reached")
	// ErrOutputTooLarge: the response was over the output cap.
	ErrOutputTooLarge = errors.New("output over the limit")
	// ErrBadResponse: the response is not what ABI v1 allows.
	ErrBadResponse = errors.New("malformed response")
	// ErrGuest: the guest reported an error of its own.
	ErrGuest = errors.New("guest error")
	// ErrBadModule: the module does not compile or lacks an ABI v1 export.
	ErrBadModule = errors.New("not an mcpx ABI v1 module")
	// ErrClosed: the plugin or host was closed.
	ErrClosed = errors.New("closed")
	// ErrUnknownPreset: no preset has that name.
	ErrUnknownPreset = errors.New("unknown preset")
	// ErrNotLoaded: a plugin of a watched folder failed to load (a bad
	// module or sidecar) and would serve the call, which the custom layer
	// then fails.
	ErrNotLoaded = errors.New("failed to load")
)

// PluginError is a failure of one plugin; it names the plugin.
type PluginError struct {
	// Plugin is the plugin's name (its file's base name, or the preset).
	Plugin string
	// Err is the cause; it wraps one of the sentinels.
	Err error
}

// Error says "plugin[<name>]: <cause>".
func (e *PluginError) Error() string { return fmt.Sprintf("plugin[%s]: %v", e.Plugin, e.Err) }

// Unwrap returns the cause.
func (e *PluginError) Unwrap() error { return e.Err }

// Package wasmguest carries the guest SDK sources that "mcpx plugin new"
// writes into a new plugin: the Rust SDK (one dependency-free file) is
// copied in whole, so a Rust plugin builds with nothing but rustc. The Go
// SDK is the package in go/, which a Go plugin imports.
package wasmguest

import _ "embed"

// RustSDK is sdk/wasm-guest/rust/src/lib.rs, the mcpx_guest crate.
//
//go:embed rust/src/lib.rs
var RustSDK string

// RustCargo is the crate's Cargo.toml.
//
//go:embed rust/Cargo.toml
var RustCargo string

// ABI is ABI.md, the contract.
//
//go:embed ABI.md
var ABI string

// GoSDKImport is the import path of the Go guest SDK.
const GoSDKImport = "github.com/mcpx-dev/mcpx/sdk/wasm-guest/go"

// Package rules holds the tests that keep rules of the module's
// libraries, read from their source: no package-level mutable state
// (state belongs to whoever runs them: a WASM host, a registry, a clock is
// made by main or a test and passed in, so two engines or gateways in one
// process never share it by accident), no public name that only
// re-exports another package's type (a type is declared where its
// behaviour is), one Duration for the whole config tree, comments,
// scripts and docs that give a reason rather than cite a tracker, and a
// linter (.golangci.yml) run with every build tag the module's files use.
package rules

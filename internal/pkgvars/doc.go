// Package pkgvars holds the test that keeps package-level mutable state out
// of the module's libraries: state belongs to whoever runs them (a WASM
// host, a registry, a clock is made by main or a test and passed in), so
// two engines or gateways in one process never share it by accident.
package pkgvars

// Package replicas holds the test of mcpx on more than one machine: two `mcpx serve --listen` processes on one S3 bucket (versitygw on
// loopback) behind Debian's haproxy, round robin and no stickiness for
// 2026-07-28 requests. A stateless client whose consecutive requests
// alternate replicas stores an artifact through one and lists, reads (as
// a resource and by signed URL), queries and collects it through the
// other; another principal gets "not found" on either; a subscription
// made on one replica hears of an update made through the other when the
// upstream is shared. docs/operations.md shows the haproxy config the test
// runs (checked against the test's). The package has only tests.
package replicas

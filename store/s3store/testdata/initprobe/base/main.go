// Command base links what the S3 store links beyond its client library:
// the baseline of TestInitCost.
package main

import (
	_ "encoding/xml"
	_ "net/http"

	_ "github.com/hashicorp/go-hclog"
	_ "golang.org/x/sync/errgroup"

	_ "github.com/mcpx-dev/mcpx/store"
)

func main() {}

// Command s3 links the S3 store: what TestInitCost measures.
package main

import (
	_ "encoding/xml"
	_ "net/http"

	_ "github.com/hashicorp/go-hclog"
	_ "golang.org/x/sync/errgroup"

	_ "github.com/mcpx-dev/mcpx/store"
	_ "github.com/mcpx-dev/mcpx/store/s3store"
)

func main() {}

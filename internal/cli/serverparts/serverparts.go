// Package serverparts is what cmd/mcpx-server links beyond the CLI (see
// internal/cli/parts): the S3 store, and the Prometheus metrics and
// OpenTelemetry traces of the gateway.
package serverparts

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcpx-dev/mcpx/internal/cli/config"
	"github.com/mcpx-dev/mcpx/internal/cli/parts"
	"github.com/mcpx-dev/mcpx/query/jq"
	"github.com/mcpx-dev/mcpx/store/s3store"
)

// Set is every part.
func Set() parts.Set {
	return parts.Set{
		OpenS3: openS3,
		JQ:     jq.Run,
		Serve:  serve,
		Check:  check,
	}
}

// openS3 opens the S3 store of c, each empty field filled from the
// standard AWS environment variables.
func openS3(ctx context.Context, c config.S3, log hclog.Logger) (parts.Store, error) {
	scfg := storeConfig(c, os.Getenv)
	scfg.Logger = log
	st, err := s3store.Open(ctx, scfg)
	if err != nil {
		return nil, fmt.Errorf("open artifact store: %w", err)
	}
	return st, nil
}

// storeConfig returns the s3store configuration of s, each empty field
// filled from the standard AWS environment variables getenv reads.
func storeConfig(s config.S3, getenv func(string) string) s3store.Config {
	or := func(v string, envs ...string) string {
		for _, e := range envs {
			if v != "" {
				break
			}
			v = getenv(e)
		}
		return v
	}
	c := s3store.Config{
		Endpoint: or(s.Endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
		Bucket:   s.Bucket,
		Region:   or(s.Region, "AWS_REGION", "AWS_DEFAULT_REGION"),
		Prefix:   s.Prefix, PathStyle: s.PathStyle,
		AccessKey: s.AccessKey, SecretKey: s.SecretKey,
		PutTimeout: time.Duration(s.PutTimeout), OrphanGrace: time.Duration(s.OrphanGrace),
	}
	if c.AccessKey == "" && c.SecretKey == "" {
		c.AccessKey, c.SecretKey = getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
		c.SessionToken = getenv("AWS_SESSION_TOKEN")
	}
	return c
}

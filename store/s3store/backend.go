package s3store

// The S3 store as a backend a config file names: {"store": {"s3": {…}}}.

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// Kind is the key of the S3 store's section under a config file's
// "store".
const Kind = "s3"

func init() {
	store.RegisterBackend(store.Backend{Kind: Kind, Open: openSection})
}

// openSection opens the store of a config file's "store.s3" section.
func openSection(ctx context.Context, section json.RawMessage, o store.OpenOptions) (store.Store, error) {
	c, err := sectionConfig(section, o.Getenv)
	if err != nil {
		return nil, err
	}
	c.Logger = o.Logger
	return Open(ctx, c)
}

// sectionConfig is the Config of a config file's "store.s3" section:
// Config's JSON fields, and "put_timeout" and "orphan_grace" ("2m", or
// seconds). Keys the section does not know are left to the caller's
// config (mcpx's "presign_urls"). What the section leaves empty is read
// with getenv (nil reads nothing) from the standard AWS variables: the
// endpoint from AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL; the region
// from AWS_REGION, else AWS_DEFAULT_REGION; and, when it names neither
// key, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.
func sectionConfig(section json.RawMessage, getenv func(string) string) (Config, error) {
	var c Config
	var d struct {
		PutTimeout  store.Duration `json:"put_timeout"`
		OrphanGrace store.Duration `json:"orphan_grace"`
	}
	if err := json.Unmarshal(section, &c); err != nil {
		return Config{}, fmt.Errorf("%w: store.s3: %w", ErrConfig, err)
	}
	if err := json.Unmarshal(section, &d); err != nil {
		return Config{}, fmt.Errorf("%w: store.s3: %w", ErrConfig, err)
	}
	c.PutTimeout, c.OrphanGrace = time.Duration(d.PutTimeout), time.Duration(d.OrphanGrace)
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	or := func(v string, envs ...string) string {
		for _, e := range envs {
			if v != "" {
				break
			}
			v = getenv(e)
		}
		return v
	}
	c.Endpoint = or(c.Endpoint, "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL")
	c.Region = or(c.Region, "AWS_REGION", "AWS_DEFAULT_REGION")
	if c.AccessKey == "" && c.SecretKey == "" {
		c.AccessKey, c.SecretKey = getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
		c.SessionToken = getenv("AWS_SESSION_TOKEN")
	}
	return c, nil
}

package s3store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/mcpx-dev/mcpx/store"
	"github.com/mcpx-dev/mcpx/store/s3store"
	"github.com/mcpx-dev/mcpx/store/s3store/s3test"
	"github.com/mcpx-dev/mcpx/store/storetest"
)

var prefixes atomic.Int64

// opener returns storetest's open: a new store under a fresh prefix of one
// bucket on one versitygw.
func opener(t *testing.T, cfg s3store.Config) func(t *testing.T) store.Store {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t)
	return func(t *testing.T) store.Store {
		c := cfg
		c.Endpoint, c.Bucket, c.PathStyle = srv.Endpoint, bucket, true
		c.AccessKey, c.SecretKey = s3test.AccessKey, s3test.SecretKey
		c.Prefix = fmt.Sprintf("t%d", prefixes.Add(1))
		st, err := s3store.Open(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, opener(t, s3store.Config{PageSize: 7}))
}

func TestRetention(t *testing.T) {
	storetest.RunRetention(t, opener(t, s3store.Config{}))
}

func TestSearch(t *testing.T) {
	storetest.RunSearch(t, opener(t, s3store.Config{}))
}

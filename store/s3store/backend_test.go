package s3store

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpx-dev/mcpx/store"
)

// The S3 store registers itself as the backend of "store.s3".
func TestRegisteredAsS3(t *testing.T) {
	if b, ok := store.DefaultBackends().Lookup("s3"); !ok || b.Open == nil {
		t.Fatalf("no %q backend registered: %v", Kind, store.DefaultBackends().Kinds())
	}
}

// store.s3's timeouts reach the store; unset, they are zero (the store's
// defaults). What the section leaves empty comes from the AWS variables;
// what it sets wins.
func TestSectionConfig(t *testing.T) {
	none := func(string) string { return "" }
	c, err := sectionConfig([]byte(`{"bucket":"b","put_timeout":"30s","orphan_grace":7200,"presign_urls":true}`), none)
	if err != nil || c.PutTimeout != 30*time.Second || c.OrphanGrace != 2*time.Hour || c.Bucket != "b" {
		t.Errorf("store config %+v, %v", c, err)
	}
	if c, err := sectionConfig([]byte(`{"bucket":"b"}`), nil); err != nil || c.PutTimeout != 0 || c.OrphanGrace != 0 {
		t.Errorf("store config %+v, %v: want the store's defaults (zero)", c, err)
	}
	env := map[string]string{"AWS_ENDPOINT_URL": "http://env:1", "AWS_DEFAULT_REGION": "eu", "AWS_ACCESS_KEY_ID": "ak", "AWS_SECRET_ACCESS_KEY": "sk", "AWS_SESSION_TOKEN": "tok"}
	c, err = sectionConfig([]byte(`{"bucket":"b"}`), func(k string) string { return env[k] })
	if err != nil || c.Endpoint != "http://env:1" || c.Region != "eu" || c.AccessKey != "ak" || c.SecretKey != "sk" || c.SessionToken != "tok" {
		t.Errorf("from the environment: %+v, %v", c, err)
	}
	c, err = sectionConfig([]byte(`{"bucket":"b","endpoint":"http://cfg:2","access_key":"a","secret_key":"s"}`), func(k string) string { return env[k] })
	if err != nil || c.Endpoint != "http://cfg:2" || c.AccessKey != "a" || c.SecretKey != "s" || c.SessionToken != "" {
		t.Errorf("the section's own: %+v, %v", c, err)
	}
	if _, err := sectionConfig([]byte(`{"bucket":"b","put_timeout":"soon"}`), nil); !errors.Is(err, ErrConfig) {
		t.Errorf("a bad put_timeout: %v, want ErrConfig", err)
	}
}

package persist

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterProbeTimeout bounds the look at whether a single address is a
// Redis Cluster node.
const clusterProbeTimeout = time.Second

// NewStoreClient returns a client of the store at rawURL (see ParseURL).
// A list of nodes is a Redis Cluster; so is a single address whose server
// says it is a cluster node (cluster_enabled:1, as behind a managed
// service's configuration endpoint), which a plain client could not use for
// keys on other nodes. A server that does not answer within a second is
// taken as the address says, a single Redis, for the client's life:
// unsure reports it.
func NewStoreClient(ctx context.Context, rawURL string) (client redis.UniversalClient, unsure bool, err error) {
	opts, err := storeOptions(rawURL)
	if err != nil {
		return nil, false, err
	}
	client = redis.NewUniversalClient(opts)
	single, ok := client.(*redis.Client)
	if !ok {
		return client, false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, clusterProbeTimeout)
	defer cancel()
	info, err := single.Info(ctx, "cluster").Result()
	if err != nil {
		return client, true, nil
	}
	if !strings.Contains(info, "cluster_enabled:1") {
		return client, false, nil
	}
	single.Close()
	return redis.NewClusterClient(opts.Cluster()), false, nil
}

// storeOptions is ParseURL for shared mode's client, which never sends a
// command again after its connection failed: the store may have carried
// out a compare-and-set whose reply was lost, and sent again it would
// conflict with its own write and have its decisions (a refund among them)
// made and applied a second time. Shared marks the store down instead.
func storeOptions(rawURL string) (*redis.UniversalOptions, error) {
	opts, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	opts.MaxRetries = -1
	return opts, nil
}

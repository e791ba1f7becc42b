package persist

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterProbeTimeout bounds the look at whether a single address is a
// Redis Cluster node.
const clusterProbeTimeout = time.Second

// NewStoreClient returns a client of the store at rawURL (see ParseURL),
// for NewShared. A list of nodes is a Redis Cluster; so is a single address
// whose server says it is a cluster node (cluster_enabled:1, as behind a
// managed service's configuration endpoint), which a plain client could not
// use for keys on other nodes. A server that does not answer within a
// second cannot be asked: the client is then a single Redis's until the
// store first answers, when a Shared over it asks again, before it sends a
// decision, and turns to a cluster client if it is a cluster node. The
// second result reports that case. A server that refuses INFO (NOPERM
// under an ACL without @dangerous, or the command renamed away) cannot say
// and never will: it is taken for what its address says, a single Redis.
func NewStoreClient(ctx context.Context, rawURL string) (redis.UniversalClient, bool, error) {
	opts, err := storeOptions(rawURL)
	if err != nil {
		return nil, false, err
	}
	if len(opts.Addrs) > 1 {
		return newStoreClusterClient(opts), false, nil
	}
	single := redis.NewClient(opts.Simple())
	ctx, cancel := context.WithTimeout(ctx, clusterProbeTimeout)
	defer cancel()
	cluster, err := isClusterNode(ctx, single)
	if err != nil {
		return &unaskedClient{Client: single, opts: opts}, true, nil
	}
	if !cluster {
		return single, false, nil
	}
	single.Close()
	return newStoreClusterClient(opts), false, nil
}

// unaskedClient is the client of a single address whose server could not
// be asked whether it is a Redis Cluster node: a single Redis's, with the
// options to make a cluster client of if it is one (Shared.ask).
type unaskedClient struct {
	*redis.Client
	opts *redis.UniversalOptions
}

// isClusterNode asks a single address's server whether it is a Redis
// Cluster node. A server that refuses INFO is not one as far as anyone can
// tell: asking again would get the same refusal (see NewStoreClient).
func isClusterNode(ctx context.Context, single redis.UniversalClient) (bool, error) {
	info, err := single.Info(ctx, "cluster").Result()
	if redis.HasErrorPrefix(err, "NOPERM") || redis.HasErrorPrefix(err, "unknown command") {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return strings.Contains(info, "cluster_enabled:1"), nil
}

// newStoreClusterClient is shared mode's client of a Redis Cluster. Its
// nodes' clients never send a pipeline again once its connection failed
// (noResend): go-redis's cluster client does, as it follows MOVED and
// ASK, and no option separates the two.
func newStoreClusterClient(opts *redis.UniversalOptions) *redis.ClusterClient {
	c := opts.Cluster()
	c.NewClient = func(o *redis.Options) *redis.Client {
		nc := redis.NewClient(o)
		nc.AddHook(noResend{})
		return nc
	}
	return redis.NewClusterClient(c)
}

// noResend is a hook that refuses to send a pipeline any of whose
// commands failed for a reason other than the store's own error reply
// (MOVED, ASK, TRYAGAIN: not carried out), or was answered already: a
// command that met a connection's failure may have been carried out, its
// reply lost, and a script call or a native SET answered already is sent
// again with its node's whole batch when the batch's first command meets TRYAGAIN or
// LOADING; sent again, a compare-and-set would conflict with its own write.
// The commands keep what they had, and those not answered fail the round.
type noResend struct{}

// errAnsweredAgain is noResend's refusal of a batch holding a command
// answered already.
var errAnsweredAgain = errors.New("persist: a pipeline sent again held a command answered already")

func (noResend) DialHook(next redis.DialHook) redis.DialHook { return next }

func (noResend) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (noResend) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			var reply redis.Error
			err := cmd.Err()
			if err != nil && !errors.As(err, &reply) {
				return err
			}
			if err == nil && answered(cmd) {
				return errAnsweredAgain
			}
		}
		return next(ctx, cmds)
	}
}

// answered reports whether cmd, a shared-mode command without an error,
// holds its reply: a script call's (never nil) or a native SET's ("OK").
// Their replies are cleared before each round sends them.
func answered(cmd redis.Cmder) bool {
	switch c := cmd.(type) {
	case *redis.Cmd:
		return c.Val() != nil
	case *redis.StatusCmd:
		return c.Val() != ""
	}
	return false
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

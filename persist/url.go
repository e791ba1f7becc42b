package persist

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ParseURL reads a backing Redis address: one node, or a comma-separated
// list of the nodes of a Redis Cluster (two or more). A node is a URL,
// redis://[user:password@]host[:port][/db][?options] or rediss://... for TLS
// (the options are go-redis's: dial_timeout, pool_size, ...), or a bare
// host:port. In a list, the nodes given as bare host:port take the scheme
// and credentials of the URLs, which must agree, and only the first URL may
// carry options; a cluster has database 0 only.
//
// No error it returns repeats a password.
func ParseURL(raw string) (*redis.UniversalOptions, error) {
	elems := strings.Split(raw, ",")
	var (
		addrs []string
		first *redis.Options // the first node given as a URL
	)
	scheme := ""
	for i, el := range elems {
		el = strings.TrimSpace(el)
		if el == "" {
			return nil, fmt.Errorf("node %d of %d is empty", i+1, len(elems))
		}
		if !strings.Contains(el, "://") {
			addr, err := parseHostPort(el)
			if err != nil {
				return nil, fmt.Errorf("node %d: %w", i+1, err)
			}
			addrs = append(addrs, addr)
			continue
		}
		u, err := url.Parse(el)
		if err != nil {
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err // url.Error repeats the whole URL, password included
			}
			return nil, fmt.Errorf("node %d: not a URL: %v", i+1, err)
		}
		if u.Scheme != "redis" && u.Scheme != "rediss" {
			return nil, fmt.Errorf("node %d: scheme %q: want redis:// or rediss://", i+1, u.Scheme)
		}
		o, err := redis.ParseURL(el)
		if err != nil {
			return nil, fmt.Errorf("node %d: %v", i+1, err)
		}
		addrs = append(addrs, o.Addr)
		if first == nil {
			first, scheme = o, u.Scheme
			continue
		}
		switch {
		case u.Scheme != scheme:
			return nil, fmt.Errorf("node %d: scheme %s:// differs from the first node's %s://", i+1, u.Scheme, scheme)
		case u.User != nil && (o.Username != first.Username || o.Password != first.Password):
			return nil, fmt.Errorf("node %d: credentials differ from the first node's", i+1)
		case u.RawQuery != "":
			return nil, fmt.Errorf("node %d: options go on the first node given as a URL only", i+1)
		}
	}
	if first == nil {
		first = &redis.Options{}
	}
	if len(addrs) > 1 && first.DB != 0 {
		return nil, fmt.Errorf("database %d: a Redis Cluster has database 0 only", first.DB)
	}
	opts := universal(first, addrs)
	if len(addrs) > 1 && opts.TLSConfig != nil {
		// Each node's certificate is checked against that node's own host
		// name, which the TLS dialer takes from the address when unset.
		opts.TLSConfig.ServerName = ""
	}
	return opts, nil
}

// parseHostPort checks a bare node address and adds Redis's port if there
// is none.
func parseHostPort(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Contains(s, ":") && !strings.HasPrefix(s, "[") {
			return "", fmt.Errorf("%q: want host:port or a redis:// URL", s)
		}
		host, port = strings.Trim(s, "[]"), "6379"
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", fmt.Errorf("%q: port %q is not a number from 1 to 65535", s, port)
	}
	if host == "" {
		return "", fmt.Errorf("%q: no host", s)
	}
	return net.JoinHostPort(host, port), nil
}

// universal copies a node's options into options for one node or, with
// several addresses, a cluster.
func universal(o *redis.Options, addrs []string) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		Addrs:           addrs,
		ClientName:      o.ClientName,
		DB:              o.DB,
		Protocol:        o.Protocol,
		Username:        o.Username,
		Password:        o.Password,
		MaxRetries:      o.MaxRetries,
		MinRetryBackoff: o.MinRetryBackoff,
		MaxRetryBackoff: o.MaxRetryBackoff,
		DialTimeout:     o.DialTimeout,
		ReadTimeout:     o.ReadTimeout,
		WriteTimeout:    o.WriteTimeout,
		// A deadline on the context (Writer.Close's) bounds a call.
		ContextTimeoutEnabled: true,
		PoolFIFO:              o.PoolFIFO,
		PoolSize:              o.PoolSize,
		PoolTimeout:           o.PoolTimeout,
		MinIdleConns:          o.MinIdleConns,
		MaxIdleConns:          o.MaxIdleConns,
		MaxActiveConns:        o.MaxActiveConns,
		ConnMaxIdleTime:       o.ConnMaxIdleTime,
		ConnMaxLifetime:       o.ConnMaxLifetime,
		TLSConfig:             o.TLSConfig,
		WriteBufferSize:       writeBufferSize,
	}
}

// writeBufferSize is the write buffer of each connection to the store. A
// shared-mode round is one script call of tens of kilobytes (a write-behind
// flush, a pipeline as large): a buffer that holds it whole sends it in one
// write(2), where go-redis's default (32 KiB) would take several, each a
// wake-up and a partial read for the store.
const writeBufferSize = 256 << 10

// Redact returns raw, a backing Redis address as ParseURL reads it, with
// every password replaced by "xxxxx", for logs.
func Redact(raw string) string {
	elems := strings.Split(raw, ",")
	for i, el := range elems {
		el = strings.TrimSpace(el)
		if !strings.Contains(el, "://") {
			elems[i] = el
			continue
		}
		u, err := url.Parse(el)
		if err != nil {
			elems[i] = "(unreadable URL)"
			continue
		}
		elems[i] = u.Redacted()
	}
	return strings.Join(elems, ",")
}

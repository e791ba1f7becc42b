//go:build !rlsconfig

package main

import (
	"context"
	"errors"
	"time"

	"github.com/cellserver/cellserver/rls"
)

// This build has no rate limit configuration package (rls/config lands
// separately; build with -tags rlsconfig once it has, see rls_config.go):
// --rls-config is refused, and --rls-addr alone answers OK.

var errNoRLSConfig = errors.New("this build cannot read --rls-config (built without rls/config)")

func loadRLSLimits(path string) (rls.Matcher, error) { return nil, errNoRLSConfig }

func watchRLSLimits(ctx context.Context, path string, every time.Duration, onChange func(rls.Matcher), onError func(error)) {
	<-ctx.Done()
}

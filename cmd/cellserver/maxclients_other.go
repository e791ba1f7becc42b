//go:build !unix

package main

import "errors"

// errNoOpenFileLimit reports a system without RLIMIT_NOFILE.
var errNoOpenFileLimit = errors.New("no open-file limit on this system")

// openFileLimit reports that the system has no RLIMIT_NOFILE.
func openFileLimit() (soft, hard uint64, err error) { return 0, 0, errNoOpenFileLimit }

// setOpenFileLimit is never called without openFileLimit.
func setOpenFileLimit(soft, hard uint64) error { return errNoOpenFileLimit }

//go:build unix

package main

import (
	"errors"
	"syscall"
)

// errNoOpenFileLimit reports a system without RLIMIT_NOFILE.
var errNoOpenFileLimit = errors.New("no open-file limit on this system")

// openFileLimit returns the process's soft and hard RLIMIT_NOFILE.
func openFileLimit() (soft, hard uint64, err error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, err
	}
	return uint64(r.Cur), uint64(r.Max), nil
}

// setOpenFileLimit sets the process's RLIMIT_NOFILE.
func setOpenFileLimit(soft, hard uint64) error {
	var r syscall.Rlimit
	setRlim(&r.Cur, soft)
	setRlim(&r.Max, hard)
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
}

// setRlim stores v in a field of syscall.Rlimit, signed on some systems
// (FreeBSD), unsigned on others.
func setRlim[T int64 | uint64](field *T, v uint64) { *field = T(v) }

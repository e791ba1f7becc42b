package main

import "syscall"

// childAttr puts a child in its own process group, so that a terminal's
// Ctrl-C reaches bench alone and bench stops its children in order, and has
// the kernel kill the child if bench itself dies without stopping it.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

//go:build !linux

package main

import "syscall"

// childAttr leaves a child's attributes as they are: only Linux has a parent
// death signal, and bench stops its children itself.
func childAttr() *syscall.SysProcAttr { return nil }

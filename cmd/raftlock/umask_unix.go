//go:build unix

package main

import "syscall"

// restrictUmask makes every file the server creates private to its user (the data
// directory holds lease IDs, the TLS directory keys).
func restrictUmask() { syscall.Umask(0o077) }

//go:build !linux

package nemesis

import "net"

// ProcSource needs Linux's /proc; elsewhere every source is Unknown, and the proxies can
// then only block or delay everything towards a node.
func ProcSource(pids func() map[int]int) IdentifyFunc {
	return func(net.Conn) int { return Unknown }
}

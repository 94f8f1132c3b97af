package cluster

import (
	"fmt"
	"net"
	"strconv"
)

// ValidID reports whether id can name a member: 1-64 characters of [A-Za-z0-9._-], so it
// fits in logs, URLs and certificate names without escaping.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ValidateAddr checks a member's advertised address: host:port with a host other nodes
// can dial (not empty, not 0.0.0.0 or [::]) and a port from 1 to 65535.
func ValidateAddr(what, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q is not host:port: %v", what, addr, err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("%s %q: port must be 1-65535", what, addr)
	}
	if host == "" {
		return fmt.Errorf("%s %q has no host", what, addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("%s %q is not an address other nodes can dial", what, addr)
	}
	if len(addr) > 300 {
		return fmt.Errorf("%s is too long", what)
	}
	return nil
}

// MemberRaftAddr returns the Raft address of member id and whether it is a member.
func (n *Node) MemberRaftAddr(id string) (string, bool) {
	for _, s := range n.servers() {
		if string(s.ID) == id {
			return string(s.Address), true
		}
	}
	return "", false
}

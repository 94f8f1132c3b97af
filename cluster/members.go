package cluster

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
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

// Members is the node's membership: the Raft configuration, each member's registered
// addresses and protocol version. Reach it with Node.Members.
type Members struct{ n *Node }

// Add adds a voting member and records its addresses, or re-registers the HTTP
// address of an existing member. An existing member is moved to another Raft address only
// with replace: otherwise anyone allowed to register could take over a member's
// replication stream (raft's AddVoter silently re-points an existing ID).
func (m *Members) Add(ctx context.Context, info NodeInfo, replace bool) error {
	n := m.n
	if !ValidID(info.ID) {
		return fmt.Errorf("%w: node ID %q must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-'", ErrInvalidMember, info.ID)
	}
	if err := ValidateAddr("raft_addr", info.RaftAddr); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidMember, err)
	}
	if err := ValidateAddr("http_addr", info.HTTPAddr); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidMember, err)
	}
	if err := n.leader.waitReady(ctx); err != nil {
		return err
	}
	cur, member := m.RaftAddr(info.ID)
	switch {
	case member && cur != info.RaftAddr && !replace:
		return fmt.Errorf("%w: member %s is at %s; to move it to %s pass replace (raftlock cluster add --replace)", ErrMemberConflict, info.ID, cur, info.RaftAddr)
	case !member || cur != info.RaftAddr:
		if err := n.wait(n.raft.AddVoter(raft.ServerID(info.ID), raft.ServerAddress(info.RaftAddr), 0, n.cfg.ApplyTimeout)); err != nil {
			return raftError(n.raft, err, false)
		}
	}
	_, err := n.prop.propose(ctx, &fsm.Command{Type: fsm.TypeRegisterNode, Node: info})
	return err
}

// Remove removes a member from the cluster and forgets its addresses. Asked to
// remove itself while it leads, the node first hands leadership to another voter and
// answers ErrNotLeader, so the request is forwarded to the new leader, which removes it
// without an election timeout's worth of unavailability.
func (m *Members) Remove(ctx context.Context, id string) error {
	n := m.n
	if err := n.leader.waitReady(ctx); err != nil {
		return err
	}
	if _, member := m.RaftAddr(id); !member {
		return ErrNotMember
	}
	if id == n.cfg.ID && len(n.servers()) > 1 {
		if err := n.wait(n.raft.LeadershipTransfer()); err != nil {
			return fmt.Errorf("cluster: handing leadership over before removing this node: %w", raftError(n.raft, err, false))
		}
		n.log.Info("handed leadership over before removing this node")
		return ErrNotLeader
	}
	if err := n.wait(n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout)); err != nil {
		return raftError(n.raft, err, false)
	}
	_, err := n.prop.propose(ctx, &fsm.Command{Type: fsm.TypeRemoveNode, Node: fsm.NodeInfo{ID: id}})
	return err
}

// TransferLeadership hands leadership to voter to ("" for any) and returns the new
// leader's ID once this node has seen it.
func (m *Members) TransferLeadership(ctx context.Context, to string) (string, error) {
	n := m.n
	if err := n.leader.waitReady(ctx); err != nil {
		return "", err
	}
	var f raft.Future
	if to == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		addr, member := m.RaftAddr(to)
		if !member {
			return "", ErrNotMember
		}
		if to == n.cfg.ID {
			return to, nil
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(addr))
	}
	if err := n.wait(f); err != nil {
		if mapped := raftError(n.raft, err, false); mapped != err {
			return "", mapped
		}
		return "", fmt.Errorf("%w: %v", ErrTransferFailed, err)
	}
	// The transfer is done once the target has been told to campaign; wait (briefly) until
	// this node hears of the new leader, so the answer names it.
	deadline := time.Now().Add(4 * n.cfg.ElectionTimeout)
	for {
		if _, id := n.raft.LeaderWithID(); id != "" && string(id) != n.cfg.ID {
			return string(id), nil
		}
		if time.Now().After(deadline) {
			return "", nil
		}
		select {
		case <-ctx.Done():
			return "", nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// RaftAddr returns the Raft address of member id and whether it is a member.
func (m *Members) RaftAddr(id string) (string, bool) {
	for _, s := range m.n.servers() {
		if string(s.ID) == id {
			return string(s.Address), true
		}
	}
	return "", false
}

// Has reports whether id is in the Raft configuration.
func (m *Members) Has(id string) bool {
	_, ok := m.RaftAddr(id)
	return ok
}

// Self returns this node's registration.
func (m *Members) Self() NodeInfo {
	n := m.n
	return fsm.NodeInfo{ID: n.cfg.ID, RaftAddr: n.RaftAddr(), HTTPAddr: n.HTTPAddr()}
}

// NeedsRegistration reports whether the state machine lacks this node's current
// addresses, which a follower then registers through the leader.
func (m *Members) NeedsRegistration() bool {
	self, ok := m.n.fsm.Node(m.n.cfg.ID)
	return !ok || self != m.Self()
}

// NeedsVersionRegistration reports whether this node speaks a protocol that records node
// versions and its registration is missing or out of date. Nodes of the first protocol
// version never register (they do not know how), so they hold every upgrade back.
func (m *Members) NeedsVersionRegistration() bool {
	max := m.n.fsm.MaxVersion()
	if max < fsm.TypeNodeVersion.Since() {
		return false
	}
	v, ok := m.n.fsm.NodeVersion(m.n.cfg.ID)
	return !ok || v != max
}

// MaxVersion returns the highest protocol version this node speaks.
func (m *Members) MaxVersion() uint64 { return m.n.fsm.MaxVersion() }

// RegisterVersion records that node id speaks protocol versions up to v. Followers call
// it on the leader through the API.
func (m *Members) RegisterVersion(ctx context.Context, id string, v uint64) error {
	if !m.Has(id) {
		return ErrNotMember
	}
	c := &fsm.Command{Type: fsm.TypeNodeVersion, Node: fsm.NodeInfo{ID: id}, Version: v}
	if m.n.leader.settling() {
		// The first leader of a fresh cluster waits for these before it serves.
		_, err := m.n.prop.apply(c)
		return err
	}
	_, err := m.n.prop.propose(ctx, c)
	return err
}

// below returns the members that have not registered protocol version v or a newer one,
// sorted.
func (m *Members) below(v uint64) []string {
	var out []string
	for _, s := range m.n.servers() {
		if got, ok := m.n.fsm.NodeVersion(string(s.ID)); !ok || got < v {
			out = append(out, string(s.ID))
		}
	}
	sort.Strings(out)
	return out
}

// admitted reports whether node id may open a Raft connection to this node: it is in the
// Raft configuration, or this node has none yet (it is joining, and learns the
// configuration from the leader that connects to it).
func (m *Members) admitted(id string) bool {
	return len(m.n.servers()) == 0 || m.Has(id)
}

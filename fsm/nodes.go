package fsm

import "sort"

// The node registrations: how to reach each member's Raft and HTTP endpoints, so that any
// node can find the leader's HTTP address.

// registerNode applies RegisterNode: it adds or replaces the node's registration.
func (s *state) registerNode(_ uint64, c *Command, _ *Result) {
	s.nodes[c.Node.ID] = c.Node
}

// removeNode applies RemoveNode: the node's registration and its protocol version go.
func (s *state) removeNode(_ uint64, c *Command, _ *Result) {
	delete(s.nodes, c.Node.ID)
	delete(s.nodeVersions, c.Node.ID)
}

// Nodes returns the registered nodes sorted by ID.
func (f *FSM) Nodes() []NodeInfo {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]NodeInfo, 0, len(f.s.nodes))
	for _, n := range f.s.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Node returns the registration of node id.
func (f *FSM) Node(id string) (NodeInfo, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.s.nodes[id]
	return n, ok
}

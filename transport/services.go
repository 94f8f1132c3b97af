package transport

import (
	"time"

	"github.com/raftlock/raftlock/cluster"
)

// NodeServices returns the roles of node n, for Config.Services: each role is the node's
// own role type, so a handler reaches the cluster without an adapter between them.
func NodeServices(n *cluster.Node) Services {
	return Services{
		Leases:     n.Leases(),
		Locks:      n.Locks(),
		Semaphores: n.Semaphores(),
		Elections:  n.Elections(),
		Members:    n.Members(),
		Registrar:  n.Members(),
		Routing:    n,
		Status:     n,
		ACL:        n.ACL(),
		Identities: n.ACL(),
		Usage:      n.ACL(),
		Events:     n.Events(),
		Backups:    n,
		LockSets:   n.Locks(),
	}
}

// ms is a duration as the API's *_ms fields carry it.
func ms(d time.Duration) int64 { return d.Milliseconds() }

// fromMs is an API *_ms field as a duration.
func fromMs(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

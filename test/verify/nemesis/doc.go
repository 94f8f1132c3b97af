// Package nemesis injects faults into a raftlock cluster under test: a fault-injecting TCP
// proxy for Raft traffic (Net) and a seeded fault schedule (Schedule, Fault).
//
// # The proxy
//
// Every node advertises, as its Raft address, a proxy that forwards to the address it really
// listens on, so all Raft traffic to node j passes through proxy j. hashicorp/raft dials its
// peers with the default dialer, so the source of a connection cannot be chosen or read from
// the address alone (all loopback connections come from 127.0.0.1). The proxy therefore asks
// an identify function which node opened the connection; ProcSource answers from Linux's
// /proc (the socket's inode in /proc/net/tcp, then the node process that holds it). With the
// source known, every connection belongs to an ordered pair of nodes, and rules are set per
// direction: blocked (bytes are discarded, never delivered), or delayed (delivered in order,
// d later).
//
// A TCP stream must never lose bytes in the middle: a rule change closes every connection
// between the two nodes, so a connection either forwards a direction from its first byte or
// discards it from its first byte, and raft sees lost connections and timeouts, never a
// corrupted stream.
//
// Only Raft traffic is proxied. Followers forward HTTP requests to the leader's HTTP address
// directly, so a node cut off from Raft can still forward a client's request to the leader:
// a partition here is a partition of the consensus traffic, not of the clients.
//
// Package nemesis imports nothing from raftlock; the harness supplies the processes through
// the Target interface.
package nemesis

// Package harness runs the pieces of a verification campaign that are processes or servers:
// a cluster of `raftlock serve` processes (testcluster's, seen through the nemesis's
// Target) whose advertised Raft addresses can point at fault-injecting proxies (Cluster),
// a fenced ledger over SQLite or PostgreSQL (Ledger), and
// the bank workload's worker processes (Worker), which it stops with SIGSTOP when they ask
// to be paused.
//
// It waits on conditions with deadlines, never on fixed sleeps, and returns errors instead
// of failing the test where a campaign must record the failure and go on (a node that will
// not restart is a liveness finding, not a harness crash).
package harness

// Package benchkit is the measuring half of raftlock's benchmark suite, shared by
// cmd/raftlock-bench and the etcd comparison in bench/etcd so that both systems are driven
// by exactly the same loops and measured the same way.
//
// It holds the lock workloads (uncontended, parallel, contended) written against a small
// Backend interface, latency statistics, CPU and memory readings from /proc, and the
// report: a table for people, JSON for machines, and the side-by-side comparison of two
// systems with the ratio and the targets docs/PERFORMANCE.md states.
//
// It imports nothing but the standard library, so the comparison module can use it
// without pulling in any server package.
package benchkit

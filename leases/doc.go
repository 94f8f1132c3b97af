// Package leases holds the two pieces of time-keeping that raftlock's lock state machine
// and its leader rely on:
//
//   - Table, a set of keys ordered by deadline in cluster time, from which the state machine
//     pops what has expired when an entry moves cluster time forward. Its order is total
//     (deadline, then key), so every node pops the same keys in the same order.
//   - Clock, the leader's reading of cluster time: the newest time in its log once it has
//     applied everything committed before it took office, plus the monotonic time elapsed
//     since then. It never reads the wall clock, so an NTP step cannot move it.
//
// The package imports nothing of the project, so both can be tested against small
// reference models with an injected clock.
package leases

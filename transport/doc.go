// Package transport serves raftlock's HTTP JSON API (v1) for one node.
//
// Any node answers any request. A write, or a linearizable read, that reaches a follower
// is forwarded to the leader's HTTP address (registered in the state machine) with a hop
// limit, and the leader's answer is relayed unchanged. While no leader is known the answer
// is 503 no_leader with Retry-After, never a 500 or a hang.
//
// Decoding is strict: unknown fields, trailing data, wrong types, out-of-range values and
// bodies over 64 KiB get the documented 4xx codes. Every error is
// {"error": {"code", "message"}}; one function, errorFor, maps Go errors to codes.
package transport

// Package gorunner is the Go runner of the language-neutral conformance suite
// (clients/conformance/FORMAT.md): its test starts one real three-node cluster of
// `raftlock serve` processes (and, before the first scenario that names b1, cluster B: one
// node that snapshots after every entry) and runs every scenario file against it with the
// Go client (package client: Client, Router, watches and observes) and the Go fencing
// guard. Run it with
//
//	go test -count=1 ./clients/conformance/gorunner/
//
// RAFTLOCK_CONFORMANCE_ONLY=name1,name2 runs only those scenarios.
package gorunner

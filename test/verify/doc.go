// Package verify is raftlock's fault-injection campaign: real `raftlock serve` processes
// whose Raft traffic passes through fault-injecting proxies, a fenced ledger, lock workers
// that pause for longer than their leases, a nemesis, and checkers that judge the recorded
// history (linearizability with porcupine, fencing, tokens, acknowledged operations, lease
// timing, liveness).
//
//	go test ./test/verify/                      # the short campaign and the negative controls
//	go test -tags verify -timeout 30m -run TestCampaign ./test/verify/   # the long campaign
//
// See docs/VERIFICATION.md. The campaign itself lives in the package's test files, which wire
// the subpackages together: nemesis (proxies, faults), workload (clients and their records),
// checker (the verdicts) and harness (processes, ledger).
package verify

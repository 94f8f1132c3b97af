// Package verify is raftlock's fault-injection campaign: real `raftlock serve` processes
// whose Raft traffic passes through fault-injecting proxies, a fenced ledger, lock workers
// that pause for longer than their leases, a nemesis, and checkers that judge the recorded
// history (linearizability with porcupine, fencing, tokens, acknowledged operations, lease
// timing, liveness).
//
//	go test ./test/verify/                      # the short campaign and the negative controls
//	go test -tags verify -timeout 60m -run TestCampaign ./test/verify/   # the long campaign
//	go test -tags verify -timeout 75m -run '^TestBankCampaign$' ./test/verify/   # 100,000 bank competitions
//
// The bank campaign (bank_test.go) runs the fenced-ledger workload alone in separate worker
// processes (./bankworker), stops a worker with SIGSTOP for 1.5 times its lease TTL right
// before the write of one hold in 64 (40 in the short run), and counts its lock competitions
// on their own: at least 100,000 with zero stale writes accepted and zero duplicate charges,
// on SQLite and on PostgreSQL (RAFTLOCK_TEST_POSTGRES_DSN). TestBankShort (2,000) and its
// negative control with fencing off run in `make test`. RAFTLOCK_BANK_TARGET,
// RAFTLOCK_BANK_WORKERS and RAFTLOCK_BANK_LOCKS change a bank run's size.
//
// Both long campaigns run rounds until their target of competitions, not for a time budget,
// up to a maximum (RAFTLOCK_VERIFY_MAX, RAFTLOCK_BANK_MAX) after which they fail with the rate
// they reached and what to change (goal_test.go).
//
// See docs/VERIFICATION.md. The campaign itself lives in the package's test files, which wire
// the subpackages together: nemesis (proxies, faults), workload (clients and their records),
// checker (the verdicts) and harness (processes, ledger).
package verify

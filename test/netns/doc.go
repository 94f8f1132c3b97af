// Package netns tests raftlock as it runs on real hosts: three `raftlock serve` processes,
// each in its own Linux network namespace with its own address, listening on 0.0.0.0 and
// advertising the address other "hosts" reach it at. A bridge in the root namespace joins
// them, and the test process reaches every node through it, as a client on the same LAN
// would.
//
// Addresses come from the benchmarking range 198.18.0.0/15 (RFC 2544), one /24 per test
// run, so nothing here can reach or shadow a real network. Everything a test creates
// (namespaces, veth pairs, the bridge, the processes) is removed in t.Cleanup, failure or
// not. The tests need root and iproute2; without them they skip and say what was refused.
//
// TestNetns_ThreeHostsBoundToAnyAddress checks that nodes bound to every interface forward
// to each other through their advertised addresses. TestNetns_AttackSuite runs the cluster
// with mutual TLS and ACLs and plays an attacker on the same network: plain HTTP and TCP,
// foreign and missing certificates, Raft RPCs from hashicorp/raft's own transport, forged
// headers and membership changes, guessed lease IDs and tokens without rights, and, with
// ACLs, a tenant that floods the cluster to its quotas, lets thousands of locks expire in
// one deadline and churns past the history bound beside another tenant (quotas_test.go,
// on a cluster with small quotas). Every case must be refused; then the happy path runs
// over the same network, and no node's log may contain a lease ID or ACL secret issued
// during the test. TestNetns_BrowserAttacksPlain plays a web page against a cluster
// without TLS or ACLs (cross-site requests, DNS rebinding of the API and of the pprof
// listener), as the suite does in its TLS modes.
package netns

package fsm_test

import (
	"fmt"
	"testing"

	"github.com/raftlock/raftlock/fsm"
)

// aclBenchFSM returns a state machine with a token holding 10 policies of 20 rules each,
// on prefixes of several depths (so that lookups pass over many rules before the longest
// match), and the token's secret.
func aclBenchFSM(b *testing.B) (*fsm.FSM, string) {
	f := fsm.New(nil)
	index := uint64(1)
	mustApply(b, f, index, &fsm.Command{Type: fsm.TypeSetVersion, Version: 2}, fsm.StatusOK)
	var names []string
	for p := 0; p < 10; p++ {
		c := fsm.Command{Type: fsm.TypeACLSetPolicy, ACL: fsm.ACLCommand{Policy: fmt.Sprint("team-", p)}}
		for r := 0; r < 20; r++ {
			prefix := fmt.Sprintf("team-%d/service-%d/", p, r)
			if r%5 == 4 {
				prefix += "private/"
			}
			c.ACL.Rules = append(c.ACL.Rules, fsm.ACLRule{Prefix: prefix, Access: fsm.Access(1 + (p+r)%4)})
		}
		index++
		mustApply(b, f, index, &c, fsm.StatusOK)
		names = append(names, c.ACL.Policy)
	}
	index++
	mustApply(b, f, index, &fsm.Command{Type: fsm.TypeACLSetToken, ACL: fsm.ACLCommand{
		Accessor: "0123456789abcdef", SecretHash: fsm.ACLSecretHash("bench"), Policies: names,
	}}, fsm.StatusOK)
	return f, "bench"
}

// BenchmarkACLResolve is the authorization of one request: resolve the token's hash and
// check access to one lock name, with 10 policies × 20 rules. Hashing the secret is the
// caller's and measured apart (BenchmarkACLSecretHash).
func BenchmarkACLResolve(b *testing.B) {
	f, secret := aclBenchFSM(b)
	h := fsm.ACLSecretHash(secret)
	names := []string{"team-7/service-3/jobs/nightly", "team-9/service-19/x", "elsewhere", "team-0/service-4/private/a"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id, ok := f.ACLResolve(h)
		if !ok || id.Access(names[i%len(names)]) > fsm.AccessAdmin {
			b.Fatal("resolve failed")
		}
	}
}

// BenchmarkACLResolveParallel is BenchmarkACLResolve from every core at once, as an HTTP
// server resolves: the read lock is shared.
func BenchmarkACLResolveParallel(b *testing.B) {
	f, secret := aclBenchFSM(b)
	h := fsm.ACLSecretHash(secret)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id, _ := f.ACLResolve(h)
			_ = id.Access("team-7/service-3/jobs/nightly")
		}
	})
}

// BenchmarkACLSecretHash is the caller's share of a request's authorization.
func BenchmarkACLSecretHash(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		fsm.ACLSecretHash("3f0c1d6e-7b8a-4c2d-9e1f-0a1b2c3d4e5f")
	}
}

// BenchmarkACLSetPolicy is the apply of a policy change that 1,000 tokens hold: each is
// recompiled in the entry.
func BenchmarkACLSetPolicy(b *testing.B) {
	f, _ := aclBenchFSM(b)
	index := uint64(100)
	for t := 0; t < 1000; t++ {
		index++
		mustApply(b, f, index, &fsm.Command{Type: fsm.TypeACLSetToken, ACL: fsm.ACLCommand{
			Accessor: fmt.Sprintf("%x", t+0x1000), SecretHash: fsm.ACLSecretHash(fmt.Sprint("t", t)),
			Policies: []string{"team-1", "team-2", "team-3"},
		}}, fsm.StatusOK)
	}
	p, _ := f.ACLPolicy("team-2")
	c := fsm.Command{Type: fsm.TypeACLSetPolicy, ACL: fsm.ACLCommand{Policy: "team-2", Rules: p.Rules}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		index++
		mustApply(b, f, index, &c, fsm.StatusOK)
	}
}

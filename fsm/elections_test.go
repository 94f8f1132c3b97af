package fsm

import "testing"

// An election: the first campaign leads; the leader's lease proclaims (same token, new
// value, modify index moves); another campaign is refused or queues; resigning elects the
// head candidate with its own value in the same entry.
func TestFSM_ElectionCampaignProclaimResign(t *testing.T) {
	a, b, c := LeaseID{1}, LeaseID{2}, LeaseID{3}
	f := v2(t, a, b, c) // entries 1-4
	expect(t, f, 5, Command{Type: TypeCampaign, Lease: a, Name: "svc", Value: "a1", Owner: "A"}, StatusOK, 5)
	expect(t, f, 6, Command{Type: TypeCampaign, Lease: b, Name: "svc", Value: "b1"}, StatusElectionHeld, 0)
	if r := expect(t, f, 7, Command{Type: TypeCampaign, Lease: a, Name: "svc", Value: "a2", Token: 5}, StatusOK, 5); r.Value != "a2" || r.Modify != 7 {
		t.Fatalf("proclaim: %+v", r)
	}
	expect(t, f, 8, Command{Type: TypeCampaign, Lease: a, Name: "svc", Value: "a3", Token: 4}, StatusNotHolder, 0)
	expect(t, f, 9, Command{Type: TypeCampaign, Lease: b, Name: "svc", Value: "b1", Token: 5}, StatusNotHolder, 0)
	expect(t, f, 10, Command{Type: TypeCampaign, Lease: b, Name: "svc", Value: "b1", Owner: "B", Wait: 30_000}, StatusQueued, 0)
	expect(t, f, 11, Command{Type: TypeCampaign, Lease: c, Name: "svc", Value: "c1", Wait: 30_000}, StatusQueued, 0)
	if v := f.Election("svc"); !v.Elected || v.Leader != a || v.Value != "a2" || v.Token != 5 || len(v.Candidates) != 2 || v.ModifyIndex != 11 {
		t.Fatalf("election: %+v", v)
	}
	expect(t, f, 12, Command{Type: TypeResign, Lease: a, Name: "svc", Token: 5}, StatusOK, 0)
	if v := f.Election("svc"); v.Leader != b || v.Value != "b1" || v.Owner != "B" || v.Token != 12 || v.ModifyIndex != 12 {
		t.Fatalf("the head candidate should lead with token 12 and its value: %+v", v)
	}
	expect(t, f, 13, Command{Type: TypeRevoke, Lease: b}, StatusOK, 0)
	if v := f.Election("svc"); v.Leader != c || v.Value != "c1" || v.Token != 13 {
		t.Fatalf("revoking the leader elects the next candidate in the same entry: %+v", v)
	}
	expect(t, f, 14, Command{Type: TypeResign, Lease: c, Name: "svc", Token: 13}, StatusOK, 0)
	if v := f.Election("svc"); v.Elected || v.ModifyIndex != 14 || len(f.s.elections) != 0 {
		t.Fatalf("no leader, no candidate: %+v", v)
	}
}

package fsm_test

import (
	"testing"

	"github.com/raftlock/raftlock/fsm"
)

func TestOverview_LockDetailsAndExpiringLeases(t *testing.T) {
	f, ix, a, b, c := historyLeases(t)
	tok := apply(t, f, ix, fsm.Command{Type: fsm.TypeAcquire, Now: 200, Lease: a, Name: "jobs/x", Owner: "w1"}, fsm.StatusOK).Token
	apply(t, f, ix, fsm.Command{Type: fsm.TypeAcquire, Now: 300, Lease: b, Name: "jobs/x", Owner: "w2", Wait: 60_000}, fsm.StatusQueued)
	apply(t, f, ix, fsm.Command{Type: fsm.TypeAcquire, Now: 300, Lease: c, Name: "other", Owner: "w3"}, fsm.StatusOK)
	if n := f.RenewEntries(); n != 0 {
		t.Fatalf("RenewEntries = %d before any renew", n)
	}
	apply(t, f, ix, fsm.Command{Type: fsm.TypeRenew, Now: 400, Leases: []fsm.LeaseID{a, b}}, fsm.StatusOK)
	if n := f.RenewEntries(); n != 1 {
		t.Fatalf("RenewEntries = %d after one Renew entry of two leases, want 1", n)
	}

	o := f.Overview("jobs/", "", 10, 2000, 0)
	if o.Time != 400 || o.Leases != 3 || o.Expiring != 1 || o.Truncated || len(o.Locks) != 1 {
		t.Fatalf("overview: %+v", o)
	}
	d := o.Locks[0]
	if d.Name != "jobs/x" || d.Token != tok || d.Owner != "w1" || len(d.Waiters) != 1 ||
		d.Lease != fsm.LeaseFingerprint(a) || d.TTL != 1000 || d.Deadline != 1400 || d.Granted != 200 {
		t.Fatalf("detail: %+v", d)
	}
	if o := f.Overview("", "", 1, 0, 0); !o.Truncated || len(o.Locks) != 1 || o.Expiring != 0 {
		t.Fatalf("page of one: %+v", o)
	}
	if o := f.Overview("", "", 0, 100_000, 0); len(o.Locks) != 2 || o.Expiring != 3 {
		t.Fatalf("all: %+v", o)
	}
}

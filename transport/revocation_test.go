package transport_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
)

// Deleting a token ends what it started, through a follower: its waiting acquire and its
// blocking query answer 401 unauthenticated at the deletion (long before their wait_ms),
// the lock it held is free at once (its lease was revoked in the deletion's entry), and
// the holder's release afterwards hands nothing to it. Two tokens are deleted: w, whose
// query is woken by the deletion's own entry (it frees w's lock, which moves the modify
// index of every free name) and must still not answer with data, and r, a reader that
// holds nothing, whose query only the deletion itself can end.
func TestACL_RevokedTokenEndsWhatItStarted(t *testing.T) {
	c := startACLClusterV3(t)
	m, toks := aclSetup(t, c, map[string]string{"w": `{"rules":[{"prefix":"jobs/","access":"lock"}]}`, "r": `{"rules":[{"prefix":"","access":"read"}]}`})
	w, r := toks["w"], toks["r"]
	f := c.URL(c.Follower())
	var self, rself api.ACLToken
	if st, code := callAs(t, w, "GET", f+"/v1/acl/token/self", "", &self); st != 200 {
		t.Fatalf("token self: %d %s", st, code)
	}
	if st, code := callAs(t, r, "GET", f+"/v1/acl/token/self", "", &rself); st != 200 {
		t.Fatalf("token self: %d %s", st, code)
	}
	var held, own api.Grant
	if st, code := callAs(t, m, "PUT", f+"/v1/locks/jobs/held", `{"ttl_ms":60000}`, &held); st != 200 {
		t.Fatalf("the holder acquires: %d %s", st, code)
	}
	if st, code := callAs(t, w, "PUT", f+"/v1/locks/jobs/own", `{"ttl_ms":60000}`, &own); st != 200 {
		t.Fatalf("w acquires jobs/own: %d %s", st, code)
	}
	var quiet api.LockStatus
	callAs(t, w, "GET", f+"/v1/locks/jobs/quiet", "", &quiet)

	type answer struct {
		status int
		code   string
		at     time.Time
	}
	waited, queried, rqueried := make(chan answer, 1), make(chan answer, 1), make(chan answer, 1)
	go func() {
		st, code := callAs(t, w, "PUT", f+"/v1/locks/jobs/held", `{"ttl_ms":60000,"wait_ms":20000}`, nil)
		waited <- answer{st, code, time.Now()}
	}()
	go func() {
		st, code := callAs(t, w, "GET", fmt.Sprintf("%s/v1/locks/jobs/quiet?wait_index=%d&wait_ms=20000", f, quiet.ModifyIndex), "", nil)
		queried <- answer{st, code, time.Now()}
	}()
	go func() {
		st, code := callAs(t, r, "GET", fmt.Sprintf("%s/v1/locks/jobs/quiet?wait_index=%d&wait_ms=20000", f, quiet.ModifyIndex), "", nil)
		rqueried <- answer{st, code, time.Now()}
	}()
	c.WaitFor(10*time.Second, "the acquire to wait and the query to block", func() bool {
		watches := 0
		for _, n := range c.Nodes {
			watches += n.Events().Watches()
		}
		return watches >= 4 && c.Nodes[c.Leader(10*time.Second)].FSM().Lock("jobs/held").Waiters != nil
	})
	// Every wait is 20 s: an answer within 5 s came from the deletion. r is deleted
	// first, alone: that entry changes no lock, so only the deletion can end its query.
	for _, del := range []struct {
		accessor string
		open     map[string]chan answer
	}{
		{rself.AccessorID, map[string]chan answer{"blocking query (r)": rqueried}},
		{self.AccessorID, map[string]chan answer{"waiting acquire": waited, "blocking query (w)": queried}},
	} {
		revoked := time.Now()
		if st, code := callAs(t, m, "DELETE", f+"/v1/acl/tokens/"+del.accessor, "", nil); st != 200 {
			t.Fatalf("delete a token: %d %s", st, code)
		}
		for what, ch := range del.open {
			select {
			case a := <-ch:
				if a.status != 401 || a.code != api.CodeUnauthenticated {
					t.Errorf("%s of the deleted token: %d %s, want 401 unauthenticated", what, a.status, a.code)
				}
				t.Logf("%s answered %v after the deletion", what, a.at.Sub(revoked).Round(time.Millisecond))
			case <-time.After(5 * time.Second):
				t.Fatalf("%s of the deleted token still open 5 s after the deletion", what)
			}
		}
	}
	var st api.LockStatus
	if callAs(t, m, "GET", f+"/v1/locks/jobs/own", "", &st); st.Held {
		t.Errorf("the deleted token's lock is still held: %+v", st)
	}
	if code, _ := callAs(t, m, "DELETE", f+"/v1/locks/jobs/held", fmt.Sprintf(`{"lease_id":%q,"token":%d}`, held.LeaseID, held.Token), nil); code != 200 {
		t.Fatalf("the holder releases: %d", code)
	}
	if callAs(t, m, "GET", f+"/v1/locks/jobs/held", "", &st); st.Held {
		t.Errorf("the release handed the lock on after the token's deletion: %+v", st)
	}
}

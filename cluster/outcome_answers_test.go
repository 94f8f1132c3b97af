package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/transport"
)

// leaderRouting is a ready leader: the Routing a transport server needs.
type leaderRouting struct{ transport.Routing }

func (leaderRouting) ID() string     { return "n1" }
func (leaderRouting) IsLeader() bool { return true }

// refusingLocks answers every acquire with err.
type refusingLocks struct {
	transport.LockService
	err error
}

func (l *refusingLocks) Acquire(context.Context, cluster.AcquireRequest) (cluster.Grant, error) {
	return cluster.Grant{}, l.err
}

// Every outcome of the state machine, for every command type, is answered on the wire
// with the code that its row of the outcomes table names, and that code is an entry of
// the API's catalogue (api/outcomes.go) answered with the catalogue's status. A status
// without a row, a row naming a code the catalogue lacks, or a row whose error transport
// answers with another code fails.
func TestOutcomes_AnsweredAsCatalogued(t *testing.T) {
	locks := &refusingLocks{}
	s, err := transport.NewServer(transport.Config{Services: transport.Services{
		Routing: leaderRouting{}, Locks: locks,
		// The roles the acquire never reaches: present, as a server requires, and empty.
		Leases: struct{ transport.LeaseService }{}, Semaphores: struct{ transport.SemaphoreService }{},
		Elections: struct{ transport.ElectionService }{}, Members: struct{ transport.Membership }{},
		Registrar: struct{ transport.Registrar }{}, Status: struct{ transport.StatusReporter }{},
		ACL: struct{ transport.ACLStore }{}, Identities: struct{ transport.Identities }{},
		Usage: struct{ transport.UsageReader }{}, Events: struct{ transport.EventSource }{},
		Backups: struct{ transport.Backups }{}, LockSets: struct{ transport.LockSetService }{},
	}, Logger: hclog.NewNullLogger(), HoldTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	answer := func(err error) (int, string) {
		locks.err = err
		r := httptest.NewRequest(http.MethodPut, "/v1/locks/x", strings.NewReader("{}"))
		r.Host = "127.0.0.1"
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		var eb api.ErrorBody
		if err := json.Unmarshal(w.Body.Bytes(), &eb); err != nil {
			t.Fatalf("answer %d %q: %v", w.Code, w.Body, err)
		}
		return w.Code, eb.Error.Code
	}
	var types []fsm.Type
	for t := range 256 {
		if typ := fsm.Type(t); !strings.HasPrefix(typ.String(), "type(") {
			types = append(types, typ)
		}
	}
	if len(types) < 20 {
		t.Fatalf("found only %d command types", len(types))
	}
	cycle := []fsm.CycleStep{{Lease: fsm.Fingerprint{1, 2, 3, 4}, Lock: "a"}, {Lease: fsm.Fingerprint{5, 6, 7, 8}, Lock: "b"}}
	statuses := 0
	for st := fsm.Status(0); st.String() != "status(?)"; st++ {
		statuses++
		for _, typ := range types {
			code, ok := cluster.OutcomeCode(typ, st)
			if !ok {
				t.Errorf("status %s has no row in the outcomes table (cluster/outcome.go)", st)
				break
			}
			for _, held := range [][]string{nil, {"a", "b"}} {
				r := &fsm.Result{Status: st, Held: held, Limit: 3, Cycle: cycle, Quota: fsm.QuotaLeases, Err: errors.New("why")}
				err := cluster.OutcomeError(typ, r)
				if code == "" {
					if err != nil {
						t.Errorf("%s of %s: the row names no code, but the error is %v", st, typ, err)
					}
					continue
				}
				o, ok := api.Lookup(code)
				if !ok {
					t.Errorf("%s of %s: the row names %q, which is not in the catalogue (api/outcomes.go)", st, typ, code)
					continue
				}
				if status, got := answer(err); got != code || status != o.Status {
					t.Errorf("%s of %s (held %v): answered %d %s, the row names %s (%d)", st, typ, held, status, got, code, o.Status)
				}
			}
		}
	}
	if statuses < 15 {
		t.Fatalf("found only %d statuses", statuses)
	}
}

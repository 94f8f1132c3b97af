package client_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// routeLog notes "METHOD URI" of each request and the lease_id of its body, if any.
type routeLog struct {
	mu   sync.Mutex
	reqs []string
	ids  []string
}

func (l *routeLog) note(r *http.Request, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, r.Method+" "+r.RequestURI)
	l.ids = append(l.ids, id)
}

func (l *routeLog) get() ([]string, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...), append([]string(nil), l.ids...)
}

// KeepAlive, GetLease and Revoke send the lease ID in the body of the new routes, never
// in the URL.
func TestClient_LeaseRoutesCarryIDInBody(t *testing.T) {
	var log routeLog
	mux := http.NewServeMux()
	body := func(w http.ResponseWriter, r *http.Request) string {
		var req api.LeaseRequest
		decodeJSON(t, r, &req)
		log.note(r, req.LeaseID)
		return req.LeaseID
	}
	mux.HandleFunc("POST /v1/leases/keepalive", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.Lease{LeaseID: body(w, r), TTLMs: 5000})
	})
	mux.HandleFunc("POST /v1/leases/lookup", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.Lease{LeaseID: body(w, r), TTLMs: 5000, Locks: []string{"a"}})
	})
	mux.HandleFunc("POST /v1/leases/revoke", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.RevokeResult{LeaseID: body(w, r), Released: []string{"a"}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.note(r, "")
		writeAPIError(w, api.CodeNotFound)
	})
	url, _ := fakeNode(t, mux.ServeHTTP)
	c := newClient(t, []string{url})
	ctx := ctxFor(t, 10*time.Second)
	if l, err := c.KeepAlive(ctx, fakeLeaseID); err != nil || l.TTLMs != 5000 {
		t.Fatalf("KeepAlive = %+v, %v", l, err)
	}
	if l, err := c.GetLease(ctx, fakeLeaseID); err != nil || len(l.Locks) != 1 {
		t.Fatalf("GetLease = %+v, %v", l, err)
	}
	if r, err := c.Revoke(ctx, fakeLeaseID); err != nil || len(r.Released) != 1 {
		t.Fatalf("Revoke = %+v, %v", r, err)
	}
	reqs, ids := log.get()
	want := []string{"POST /v1/leases/keepalive", "POST /v1/leases/lookup", "POST /v1/leases/revoke"}
	if strings.Join(reqs, ",") != strings.Join(want, ",") {
		t.Fatalf("requests %q; want %q", reqs, want)
	}
	for i, id := range ids {
		if id != fakeLeaseID {
			t.Errorf("%s carried lease_id %q in its body; want the lease's ID", reqs[i], id)
		}
		if strings.Contains(reqs[i], fakeLeaseID) {
			t.Errorf("the lease ID is in the URL %s", reqs[i])
		}
	}
}

// A server older than the body routes answers them 404 not_found, or 405
// method_not_allowed (its GET and DELETE /v1/leases/{id} patterns match the path): the
// client repeats the call once on the old route.
func TestClient_LeaseRoutesFallBackOnOldServer(t *testing.T) {
	for _, code := range []string{api.CodeNotFound, api.CodeMethodNotAllowed} {
		t.Run(code, func(t *testing.T) {
			var log routeLog
			mux := http.NewServeMux()
			mux.HandleFunc("POST /v1/leases/{id}/keepalive", func(w http.ResponseWriter, r *http.Request) {
				log.note(r, "")
				writeJSON(w, http.StatusOK, api.Lease{LeaseID: r.PathValue("id"), TTLMs: 5000})
			})
			mux.HandleFunc("GET /v1/leases/{id}", func(w http.ResponseWriter, r *http.Request) {
				log.note(r, "")
				writeJSON(w, http.StatusOK, api.Lease{LeaseID: r.PathValue("id"), TTLMs: 5000, Locks: []string{}})
			})
			mux.HandleFunc("DELETE /v1/leases/{id}", func(w http.ResponseWriter, r *http.Request) {
				log.note(r, "")
				writeJSON(w, http.StatusOK, api.RevokeResult{LeaseID: r.PathValue("id"), Released: []string{}})
			})
			mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
				log.note(r, "")
				writeAPIError(w, code)
			})
			url, _ := fakeNode(t, mux.ServeHTTP)
			c := newClient(t, []string{url})
			ctx := ctxFor(t, 10*time.Second)
			if l, err := c.KeepAlive(ctx, fakeLeaseID); err != nil || l.LeaseID != fakeLeaseID {
				t.Fatalf("KeepAlive = %+v, %v", l, err)
			}
			if l, err := c.GetLease(ctx, fakeLeaseID); err != nil || l.LeaseID != fakeLeaseID {
				t.Fatalf("GetLease = %+v, %v", l, err)
			}
			if r, err := c.Revoke(ctx, fakeLeaseID); err != nil || r.LeaseID != fakeLeaseID {
				t.Fatalf("Revoke = %+v, %v", r, err)
			}
			reqs, _ := log.get()
			want := []string{
				"POST /v1/leases/keepalive", "POST /v1/leases/" + fakeLeaseID + "/keepalive",
				"POST /v1/leases/lookup", "GET /v1/leases/" + fakeLeaseID,
				"POST /v1/leases/revoke", "DELETE /v1/leases/" + fakeLeaseID,
			}
			if strings.Join(reqs, ",") != strings.Join(want, ",") {
				t.Fatalf("requests\n%q\nwant\n%q", reqs, want)
			}
		})
	}
}

// A lease that a new server does not know is lease_not_found, not a reason to fall back.
func TestClient_LeaseRoutesNoFallbackOnLeaseNotFound(t *testing.T) {
	url, hits := fakeNode(t, func(w http.ResponseWriter, r *http.Request) { writeAPIError(w, api.CodeLeaseNotFound) })
	c := newClient(t, []string{url})
	if _, err := c.KeepAlive(ctxFor(t, 5*time.Second), fakeLeaseID); !errorsIs(err, client.ErrLeaseNotFound) || hits.Load() != 1 {
		t.Fatalf("KeepAlive = %v after %d requests; want ErrLeaseNotFound after 1", err, hits.Load())
	}
}

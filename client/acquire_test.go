package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// fakeLocks answers acquires as the server does with request_id: an acquire without
// lease_id creates a lease derived from its request_id, and a retry with the same
// request_id returns the grant of the first attempt instead of creating a second lease.
// Its first acquire is applied but answered like a lost answer (fail), so the client
// has to retry it.
type fakeLocks struct {
	t    *testing.T
	fail func(w http.ResponseWriter) // how the first applied acquire is (not) answered

	mu       sync.Mutex
	ids      []string             // request_id of each acquire, in arrival order
	grants   map[string]api.Grant // by request_id
	leases   int                  // leases created
	acquires int
}

func (f *fakeLocks) handle(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodPut && strings.HasPrefix(r.URL.Path, "/v1/locks/"):
		var req api.AcquireRequest
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeAPIError(w, api.CodeInvalidJSON)
			return
		}
		if ae := api.ValidateRequestID(req.RequestID); ae != nil || (req.LeaseID != "" && req.RequestID != "") {
			writeAPIError(w, api.CodeInvalidArgument)
			return
		}
		f.mu.Lock()
		f.ids = append(f.ids, req.RequestID)
		f.acquires++
		first := f.acquires == 1
		g, seen := f.grants[req.RequestID]
		if !seen {
			f.leases++
			g = api.Grant{Name: strings.TrimPrefix(r.URL.Path, "/v1/locks/"), Token: uint64(10 + f.leases),
				LeaseID: strings.Repeat("0", 31) + string(rune('0'+f.leases)), TTLMs: 10000, Owner: req.Owner}
			f.grants[req.RequestID] = g
		}
		f.mu.Unlock()
		if first {
			f.fail(w)
			return
		}
		writeJSON(w, http.StatusOK, g)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/keepalive"):
		writeJSON(w, http.StatusOK, api.Lease{LeaseID: strings.Split(r.URL.Path, "/")[3], TTLMs: 10000})
	case r.Method == http.MethodDelete && strings.HasPrefix(r.URL.Path, "/v1/leases/"):
		writeJSON(w, http.StatusOK, api.RevokeResult{LeaseID: strings.TrimPrefix(r.URL.Path, "/v1/leases/"), Released: []string{}})
	default:
		writeAPIError(w, api.CodeNotFound)
	}
}

func (f *fakeLocks) seen() (ids []string, leases int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ids...), f.leases
}

func newFakeLocks(t *testing.T, fail func(w http.ResponseWriter)) (*fakeLocks, string) {
	f := &fakeLocks{t: t, fail: fail, grants: map[string]api.Grant{}}
	url, _ := fakeNode(t, f.handle)
	return f, url
}

// unknownOutcome answers as a node whose leadership changed while the entry was in flight.
func unknownOutcome(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	writeAPIError(w, api.CodeUnknownOutcome)
}

// dropConnection closes the connection without an answer, as a node that dies after
// applying does.
func dropConnection(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

func isHex32(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// An implicit acquire (no lease_id) whose first attempt was applied but not answered is
// retried with the same request_id, so the retry gets the first attempt's grant and no
// second lease exists.
func TestAcquire_RetrySendsSameRequestID(t *testing.T) {
	f, url := newFakeLocks(t, unknownOutcome)
	c := newClient(t, []string{url}, client.WithRetryBackoff(5*time.Millisecond, 10*time.Millisecond))
	g, err := c.Acquire(ctxFor(t, 10*time.Second), "accounts/A", client.AcquireOptions{Owner: "w"})
	if err != nil {
		t.Fatal(err)
	}
	ids, leases := f.seen()
	if len(ids) != 2 {
		t.Fatalf("%d attempts; want 2", len(ids))
	}
	if !isHex32(ids[0]) || ids[1] != ids[0] {
		t.Fatalf("request_ids %q; want the same 32 hex characters on both attempts", ids)
	}
	if leases != 1 || g.Token != 11 {
		t.Fatalf("%d leases, grant %+v; want one lease and the first attempt's grant", leases, g)
	}

	// The next logical acquire draws a new ID; an acquire with a lease sends none.
	if _, err := c.Acquire(ctxFor(t, 10*time.Second), "accounts/B", client.AcquireOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctxFor(t, 10*time.Second), "accounts/C", client.AcquireOptions{LeaseID: fakeLeaseID}); err != nil {
		t.Fatal(err)
	}
	ids, _ = f.seen()
	if len(ids) != 4 || !isHex32(ids[2]) || ids[2] == ids[0] || ids[3] != "" {
		t.Fatalf("request_ids %q; want a fresh one for the second acquire and none with a lease", ids)
	}

	// A caller's own ID is used as given, and checked.
	own := "my-job-0123456789abcdef"
	if _, err := c.Acquire(ctxFor(t, 10*time.Second), "accounts/D", client.AcquireOptions{RequestID: own}); err != nil {
		t.Fatal(err)
	}
	if ids, _ = f.seen(); ids[len(ids)-1] != own {
		t.Fatalf("sent %q; want the caller's %q", ids[len(ids)-1], own)
	}
	for _, bad := range []client.AcquireOptions{{RequestID: "short"}, {RequestID: strings.Repeat("x", 20) + "!"}, {LeaseID: fakeLeaseID, RequestID: own}} {
		_, err := c.Acquire(ctxFor(t, 10*time.Second), "accounts/E", bad)
		if !errors.Is(err, client.ErrInvalid) {
			t.Errorf("Acquire(%+v) = %v; want ErrInvalid", bad, err)
		}
		if bad.RequestID != "" && strings.Contains(err.Error(), bad.RequestID) {
			t.Errorf("error %q shows the request ID, which is a secret", err)
		}
		// A lockset's acquire checks the same options the same way, before sending (every
		// answer of the fake says "fake").
		_, err = c.AcquireSet(ctxFor(t, 10*time.Second), []string{"accounts/E", "accounts/F"}, bad)
		if !errors.Is(err, client.ErrInvalid) || strings.Contains(err.Error(), "fake") {
			t.Errorf("AcquireSet(%+v) = %v; want ErrInvalid from the client, nothing sent", bad, err)
		}
	}
}

// Mutex.TryLock on a Mutex that makes its own lease takes the lock in one round trip
// without lease_id; a retry after a dropped connection carries the same request_id.
func TestMutex_TryLockRetrySendsSameRequestID(t *testing.T) {
	f, url := newFakeLocks(t, dropConnection)
	c := newClient(t, []string{url}, client.WithRetryBackoff(5*time.Millisecond, 10*time.Millisecond))
	m := c.NewMutex("accounts/A")
	if err := m.TryLock(ctxFor(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(ctxFor(t, 10*time.Second))
	ids, leases := f.seen()
	if len(ids) != 2 || !isHex32(ids[0]) || ids[1] != ids[0] || leases != 1 || m.Token() != 11 {
		t.Fatalf("request_ids %q, %d leases, token %d; want one ID twice, one lease, token 11", ids, leases, m.Token())
	}
}

// 429 too_many_requests: nothing was proposed, so the client waits the Retry-After and
// tries again, within the caller's context.
func TestClient_TooManyRequestsRetriedAfterRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	url, hits := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		n := len(at)
		mu.Unlock()
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			writeAPIError(w, api.CodeTooManyRequests)
			return
		}
		writeJSON(w, http.StatusOK, api.Grant{Name: "x", Token: 5, LeaseID: fakeLeaseID, TTLMs: 10000})
	})
	// A short backoff: only Retry-After can make the client wait a second.
	c := newClient(t, []string{url}, client.WithRetryBackoff(time.Millisecond, 2*time.Millisecond))
	g, err := c.Acquire(ctxFor(t, 10*time.Second), "x", client.AcquireOptions{})
	if err != nil || g.Token != 5 {
		t.Fatalf("Acquire = %+v, %v; want the grant of the retry", g, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if hits.Load() != 2 {
		t.Fatalf("%d attempts; want 2", hits.Load())
	}
	if d := at[1].Sub(at[0]); d < 900*time.Millisecond {
		t.Fatalf("retried after %v; the answer said Retry-After: 1", d)
	}
}

// When the caller's deadline falls before the Retry-After delay ends, the client gives up
// at once with ErrTooManyRequests rather than sleeping until its deadline for nothing.
func TestClient_TooManyRequestsBeyondDeadlineFailsFast(t *testing.T) {
	url, hits := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		writeAPIError(w, api.CodeTooManyRequests)
	})
	c := newClient(t, []string{url})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.Status(ctx, "x", client.StatusOptions{})
	if !errors.Is(err, client.ErrTooManyRequests) || !errors.Is(err, &api.Error{Code: api.CodeTooManyRequests}) {
		t.Fatalf("err = %v; want ErrTooManyRequests", err)
	}
	if ra, ok := client.RetryAfter(err); !ok || ra != 30*time.Second {
		t.Fatalf("RetryAfter = %v, %v; want 30s", ra, ok)
	}
	if d := time.Since(start); d > 2*time.Second || hits.Load() != 1 {
		t.Fatalf("gave up after %v and %d attempts; want at once after one", d, hits.Load())
	}
}

// 429 quota_exceeded: retrying cannot help until something is released, so the caller
// gets ErrQuotaExceeded at once, with the server's Retry-After, and no other endpoint is
// asked.
func TestClient_QuotaExceededIsReturned(t *testing.T) {
	a, hitsA := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "5")
		writeAPIError(w, api.CodeQuotaExceeded)
	})
	b, hitsB := fakeNode(t, clusterOK)
	c := newClient(t, []string{a, b})
	_, err := c.Acquire(ctxFor(t, 10*time.Second), "x", client.AcquireOptions{})
	if !errors.Is(err, client.ErrQuotaExceeded) || !errors.Is(err, &api.Error{Code: api.CodeQuotaExceeded}) {
		t.Fatalf("err = %v; want ErrQuotaExceeded", err)
	}
	if errors.Is(err, client.ErrTooManyRequests) {
		t.Fatalf("err = %v matches ErrTooManyRequests too", err)
	}
	if ra, ok := client.RetryAfter(err); !ok || ra != 5*time.Second {
		t.Fatalf("RetryAfter = %v, %v; want 5s", ra, ok)
	}
	if hitsA.Load() != 1 || hitsB.Load() != 0 {
		t.Fatalf("hits a=%d b=%d; want 1 and 0", hitsA.Load(), hitsB.Load())
	}
}

// List follows the pages (limit, after -> truncated, next) to the end.
func TestClient_ListFollowsPages(t *testing.T) {
	names := []string{"p/a", "p/b", "p/c", "p/d", "p/e"}
	var afters []string
	var mu sync.Mutex
	url, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/locks" || r.URL.Query().Get("prefix") != "p/" {
			writeAPIError(w, api.CodeNotFound)
			return
		}
		after := r.URL.Query().Get("after")
		mu.Lock()
		afters = append(afters, after)
		mu.Unlock()
		var page api.LockList
		for _, n := range names {
			if n > after && len(page.Locks) < 2 {
				page.Locks = append(page.Locks, api.LockStatus{Name: n, Held: true, Token: 1})
			}
		}
		if last := page.Locks[len(page.Locks)-1].Name; last != names[len(names)-1] {
			page.Truncated, page.Next = true, last
		}
		writeJSON(w, http.StatusOK, page)
	})
	c := newClient(t, []string{url})
	got, err := c.List(ctxFor(t, 10*time.Second), "p/")
	if err != nil {
		t.Fatal(err)
	}
	var gotNames []string
	for _, l := range got {
		gotNames = append(gotNames, l.Name)
	}
	if strings.Join(gotNames, ",") != strings.Join(names, ",") {
		t.Fatalf("List = %q; want %q", gotNames, names)
	}
	mu.Lock()
	if strings.Join(afters, ",") != ",p/b,p/d" {
		t.Fatalf("pages asked with after=%q; want \"\", p/b, p/d", afters)
	}
	mu.Unlock()

	page, err := c.ListPage(ctxFor(t, 10*time.Second), "p/", client.ListOptions{After: "p/b", Limit: 2})
	if err != nil || len(page.Locks) != 2 || page.Locks[0].Name != "p/c" || !page.Truncated || page.Next != "p/d" {
		t.Fatalf("ListPage = %+v, %v", page, err)
	}
}

// A server whose truncated page does not move the cursor forward cannot make List loop.
func TestClient_ListStuckCursorFails(t *testing.T) {
	var hits atomic.Int64
	url, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) > 10 {
			writeAPIError(w, api.CodeInternal)
			return
		}
		writeJSON(w, http.StatusOK, api.LockList{Locks: []api.LockStatus{{Name: "a"}}, Truncated: true, Next: "a"})
	})
	c := newClient(t, []string{url})
	if _, err := c.List(ctxFor(t, 10*time.Second), ""); !errors.Is(err, client.ErrServer) || hits.Load() != 2 {
		t.Fatalf("List = %v after %d pages; want ErrServer after 2", err, hits.Load())
	}
}

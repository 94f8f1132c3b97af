package client_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// kaCounter is an HTTP proxy to a node that records every keepalive request passing
// through: when it arrived and which leases it named.
type kaCounter struct {
	url string
	// refuseBatch makes the proxy answer a batch keepalive as a server older than batch
	// keepalives does: 400 invalid_json for the unknown field lease_ids.
	refuseBatch atomic.Bool
	mu          sync.Mutex
	reqs        []kaSeen
}

type kaSeen struct {
	at  time.Time
	ids []string
}

func newKACounter(t *testing.T, target string) *kaCounter {
	t.Helper()
	k := &kaCounter{}
	k.url = serveProxy(t, target, func(proxy http.Handler) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.URL.Path == "/v1/leases/keepalive" {
				at := time.Now()
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				var req api.KeepAliveRequest
				_ = json.Unmarshal(body, &req)
				ids := req.LeaseIDs
				if req.LeaseID != "" {
					ids = []string{req.LeaseID}
				}
				k.mu.Lock()
				k.reqs = append(k.reqs, kaSeen{at: at, ids: ids})
				k.mu.Unlock()
				if req.LeaseIDs != nil && k.refuseBatch.Load() {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					io.WriteString(w, `{"error":{"code":"invalid_json","message":"request body is not a valid JSON object: json: unknown field \"lease_ids\""}}`)
					return
				}
			}
			proxy.ServeHTTP(w, r)
		}
	})
	return k
}

// since returns the keepalive requests that arrived at or after t.
func (k *kaCounter) since(t time.Time) []kaSeen {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []kaSeen
	for _, r := range k.reqs {
		if !r.at.Before(t) {
			out = append(out, r)
		}
	}
	return out
}

// A client with 500 leases keeps them all alive with a handful of requests per keepalive
// interval, not 500.
func TestLease_BatchKeepAliveSendsFewRequests(t *testing.T) {
	tc := testcluster.StartInProcess(t, 1, nil)
	k := newKACounter(t, tc.URL(0))
	c := newClient(t, []string{k.url})
	const n, ttl = 500, 3 * time.Second // interval 1 s
	leases := make([]*client.Lease, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 20 {
				l, err := c.NewLease(ctxFor(t, 30*time.Second), ttl)
				if err != nil {
					errs <- err
					return
				}
				leases[i] = l
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, l := range leases {
			l.Close(ctxFor(t, 5*time.Second))
		}
	})
	// Let the first round, whose leases were created at different times, fall into step.
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	before := make([]time.Time, n)
	for i, l := range leases {
		before[i] = l.SafeUntil()
	}
	const intervals = 3
	testkit.WaitFor(t, 30*time.Second, "three keepalive intervals", func() bool { return time.Since(start) >= intervals*time.Second })
	reqs := k.since(start)
	renewed := map[string]int{}
	for _, r := range reqs {
		for _, id := range r.ids {
			renewed[id]++
		}
	}
	t.Logf("%d leases: %d keepalive requests in %d intervals, %d lease renewals", n, len(reqs), intervals, func() int {
		s := 0
		for _, v := range renewed {
			s += v
		}
		return s
	}())
	if len(reqs) > 3*intervals {
		t.Fatalf("%d keepalive requests in %d intervals for %d leases; want at most %d (one batch per interval, a few when out of step)", len(reqs), intervals, n, 3*intervals)
	}
	for i, l := range leases {
		if err := l.Err(); err != nil {
			t.Fatalf("lease %d lost: %v", i, err)
		}
		if renewed[l.ID()] < intervals-1 {
			t.Fatalf("lease %d renewed %d times in %d intervals", i, renewed[l.ID()], intervals)
		}
		if !l.SafeUntil().After(before[i]) {
			t.Fatalf("lease %d: SafeUntil did not move", i)
		}
	}
}

// When one lease of a batch is revoked behind the client's back, the next batch answer
// lists it as not found: that lease is lost (Done closed, ErrLeaseLost, SafeUntil no later
// than the loss) while the others stay alive, each with SafeUntil set from the send time
// of the batch that renewed it.
func TestLease_BatchKeepAliveOneRevoked(t *testing.T) {
	tc := testcluster.StartInProcess(t, 1, nil)
	k := newKACounter(t, tc.URL(0))
	c := newClient(t, []string{k.url})
	const ttl = 1500 * time.Millisecond // interval 500 ms
	ls := []*client.Lease{mustLease(t, c, ttl), mustLease(t, c, ttl), mustLease(t, c, ttl)}
	other := newClient(t, []string{tc.URL(0)})
	if _, err := other.Revoke(ctxFor(t, 10*time.Second), ls[1].ID()); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	testkit.WaitFor(t, 10*time.Second, "the revoked lease to be lost", func() bool { return closed(ls[1].Done()) })
	lostAt := time.Now()
	if err := ls[1].Err(); !errors.Is(err, client.ErrLeaseLost) {
		t.Fatalf("revoked lease: Err = %v, want ErrLeaseLost", err)
	}
	if su := ls[1].SafeUntil(); su.After(lostAt) {
		t.Fatalf("revoked lease: SafeUntil %v after it was found lost", su.Sub(lostAt))
	}
	// The loss came from a batch answer naming it, well before its TTL ran out.
	if took := lostAt.Sub(revoked); took >= ttl {
		t.Fatalf("the revoked lease was found lost only after %v (TTL %v): by its watchdog, not the batch answer", took, ttl)
	}
	// The others live on through two more intervals.
	mark := time.Now()
	testkit.WaitFor(t, 10*time.Second, "two more keepalive intervals", func() bool { return time.Since(mark) > 2*ttl/3 })
	for _, i := range []int{0, 2} {
		l := ls[i]
		if err := l.Err(); err != nil {
			t.Fatalf("lease %d lost with the revoked one: %v", i, err)
		}
		// SafeUntil = send time of the renewing batch + TTL - drift: that send time must be
		// just before a keepalive request naming this lease reached the proxy.
		sent := l.SafeUntil().Add(-(l.TTL() - l.DriftMargin()))
		ok := false
		for _, r := range k.since(sent) {
			if r.at.Sub(sent) < 200*time.Millisecond && contains(r.ids, l.ID()) {
				ok = true
			}
		}
		if !ok || sent.Before(mark.Add(-ttl)) {
			t.Fatalf("lease %d: SafeUntil implies a send at %v, matching no batch that renewed it", i, time.Since(sent))
		}
	}
	for _, r := range k.since(lostAt.Add(50 * time.Millisecond)) {
		if contains(r.ids, ls[1].ID()) {
			t.Fatal("the lost lease is still being renewed")
		}
	}
}

func contains(ids []string, id string) bool {
	for _, v := range ids {
		if v == id {
			return true
		}
	}
	return false
}

// Against a server older than batch keepalives, the client falls back to one request per
// lease and keeps every lease alive.
func TestLease_BatchKeepAliveFallsBackOnOldServer(t *testing.T) {
	tc := testcluster.StartInProcess(t, 1, nil)
	k := newKACounter(t, tc.URL(0))
	k.refuseBatch.Store(true)
	c := newClient(t, []string{k.url})
	// A TTL of many election timeouts, renewed every tenth of it: keepalives starved on a
	// loaded machine cannot lose a lease, while a client that renews nothing after the
	// refused batch leaves SafeUntil where its creation put it.
	ttl := starvedTTL(tc)
	interval := ttl / 10
	ls := []*client.Lease{
		mustLease(t, c, ttl, client.WithKeepAliveInterval(interval)),
		mustLease(t, c, ttl, client.WithKeepAliveInterval(interval)),
	}
	start := time.Now()
	singles := func() int {
		n := 0
		for _, r := range k.since(start) {
			if len(r.ids) == 1 {
				n++
			}
		}
		return n
	}
	// Renewed means a keepalive sent after the start was answered for each lease; the
	// deadline is the TTL, by which an unrenewed lease would be lost. A lost lease ends
	// the wait at once.
	testkit.WaitFor(t, ttl, "single-lease keepalives to renew every lease", func() bool {
		for _, l := range ls {
			if l.Err() != nil {
				return true
			}
			if !l.SafeUntil().After(start.Add(ttl - l.DriftMargin())) {
				return false
			}
		}
		return singles() >= 2
	})
	for i, l := range ls {
		if err := l.Err(); err != nil {
			t.Fatalf("lease %d lost against an old server: %v", i, err)
		}
	}
}

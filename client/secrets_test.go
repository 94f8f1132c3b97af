package client_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A lease ID authorizes keepalive, release and revoke: it appears in no error text and
// no log line, even when the URL that holds it fails or the lease is lost.
func TestLease_IDNotInErrorsOrLogs(t *testing.T) {
	url, _ := fakeNode(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/leases":
			writeJSON(w, http.StatusCreated, api.Lease{LeaseID: fakeLeaseID, TTLMs: 1000})
		default: // keepalive: the lease is gone
			writeAPIError(w, api.CodeLeaseNotFound)
		}
	})
	var logs syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace})
	c := newClient(t, []string{url}, client.WithLogger(logger))
	l, err := c.NewLease(ctxFor(t, 10*time.Second), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the lease to be lost", func() bool { return closed(l.Done()) })
	texts := []string{l.Err().Error(), logs.String()}

	// An endpoint that cannot be reached: the failing URL holds the ID.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	c2 := newClient(t, []string{dead.URL}, client.WithLogger(logger))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c2.KeepAlive(ctx, fakeLeaseID)
	if err == nil {
		t.Fatal("keepalive to a closed server succeeded")
	}
	texts = append(texts, err.Error(), logs.String())
	for _, s := range texts {
		if strings.Contains(s, fakeLeaseID) {
			t.Fatalf("the lease ID shows in %q", s)
		}
	}
}

// fmt prints no lease ID of a Lease or a held primitive, whatever the verb: %v of a Mutex
// printed its grant's lease ID before Format existed.
func TestFormat_NoLeaseIDInPrintedHolds(t *testing.T) {
	tc := testcluster.StartInProcess(t, 1, nil)
	c := newClient(t, tc.Endpoints())
	ctx := ctxFor(t, 20*time.Second)
	m := c.NewMutex("fmt/mutex", client.WithLeaseTTL(5*time.Second))
	if err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Unlock(context.Background())
	rw := c.NewRWMutex("fmt/rw")
	if err := rw.RLock(ctx); err != nil {
		t.Fatal(err)
	}
	defer rw.Unlock(context.Background())
	sem := c.NewSemaphore("fmt/sem", 2)
	if err := sem.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer sem.Release(context.Background())
	e := c.NewElection("fmt/e")
	if err := e.Campaign(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	defer e.Resign(context.Background())
	set, err := c.LockSet(ctx, []string{"fmt/s1", "fmt/s2"})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Unlock(context.Background())
	l, err := c.NewLease(ctx, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(context.Background())
	ids := map[string]string{"mutex": m.Lease().ID(), "rwmutex": rw.Lease().ID(), "semaphore": sem.Lease().ID(),
		"election": e.Lease().ID(), "lockset": set.Lease().ID(), "lease": l.ID()}
	values := map[string]any{"mutex": m, "rwmutex": rw, "semaphore": sem, "election": e, "lockset": set, "lease": l}
	for what, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
			out := fmt.Sprintf(verb, v)
			if strings.Contains(out, ids[what]) {
				t.Errorf("%s printed with %s shows its lease ID: %s", what, verb, out)
			}
			if what != "lease" && !strings.Contains(out, "token:") {
				t.Errorf("%s printed with %s does not say its token: %s", what, verb, out)
			}
		}
		if s := fmt.Sprint(v); strings.Contains(s, ids[what]) {
			t.Errorf("%s: Sprint shows the lease ID: %s", what, s)
		}
	}
	if got := fmt.Sprint(m); !strings.Contains(got, `"fmt/mutex"`) || !strings.Contains(got, "held: true") {
		t.Errorf("a mutex prints as %s", got)
	}
}

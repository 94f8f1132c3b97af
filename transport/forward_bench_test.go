package transport

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// BenchmarkForwardAcquire is one acquire that reaches a follower and is forwarded over
// loopback HTTP to a leader that grants at once (instantLeader): the follower's whole
// forwarding path, with a real connection (kept alive) but without raft.
func BenchmarkForwardAcquire(b *testing.B) {
	leader := httptest.NewServer(newBudgetServer(b, nil))
	defer leader.Close()
	s, err := NewServer(Config{Services: stubRoles(newFollowerNode(strings.TrimPrefix(leader.URL, "http://")).services()), Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	body := `{"lease_id":"` + benchLease + `"}`
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, apiRequest(http.MethodPut, "/v1/locks/accounts/A", strings.NewReader(body)))
		if w.Code != http.StatusOK {
			b.Fatalf("forwarded acquire: %d %s", w.Code, w.Body)
		}
	}
}

package client_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// TestNames_RefusedBeforeSending checks that every name the server's rule refuses is
// refused by the client with ErrInvalid and the rule's own message, without a request.
func TestNames_RefusedBeforeSending(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.Error(w, "fake", http.StatusInternalServerError)
	}))
	defer srv.Close()
	c := newClient(t, []string{srv.URL})
	for _, name := range []string{"", "/abs", "a//b", "../up", "a/./b", "a/..", ".", "a/", "a\x01b", "a\u0085b", strings.Repeat("n", api.MaxNameLen+1), "\xff"} {
		ctx := ctxFor(t, 10*time.Second)
		_, err := c.Acquire(ctx, name, client.AcquireOptions{})
		if !errors.Is(err, client.ErrInvalid) || !strings.Contains(err.Error(), "invalid lock name: "+api.NameRule) {
			t.Errorf("Acquire(%q) = %v; want ErrInvalid with the rule", name, err)
		}
		if _, err := c.AcquireSet(ctx, []string{"ok", name}, client.AcquireOptions{}); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("AcquireSet(ok, %q) = %v; want ErrInvalid", name, err)
		}
		if _, err := c.Status(ctx, name, client.StatusOptions{}); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("Status(%q) = %v; want ErrInvalid", name, err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Fatalf("%d requests sent for invalid names; want none", n)
	}
}

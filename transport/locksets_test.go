package transport_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
)

// Until every member speaks protocol version 3, locksets, max_hold_ms and lock_delay_ms
// are refused with 409 version_inactive naming the version, nothing applied, while the
// version 2 requests go on; once the old member is upgraded they work.
func TestAPI_LockSetsWaitForVersion3(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, func(i int, cfg *cluster.Config) {
		if i == 2 {
			cfg.MaxVersion = 2 // n3 runs the previous release
		}
	})
	c.WaitFor(30*time.Second, "protocol version 2", func() bool { return c.Nodes[0].FSM().Version() == 2 })
	hc := rawhttp.Client{}
	url := c.Endpoints()[1]
	for _, req := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/locksets", `{"names":["v3/a","v3/b"]}`},
		{http.MethodPut, "/v1/locks/v3/a", `{"max_hold_ms":1500}`},
		{http.MethodPut, "/v1/locks/v3/a", `{"lock_delay_ms":1500}`},
		{http.MethodPut, "/v1/semaphores/v3/s", `{"limit":2,"max_hold_ms":1500}`},
	} {
		a := hc.Do(req.method, url+req.path, req.body)
		code, _ := a.Body["error"].(map[string]any)["code"].(string)
		if a.Status != 409 || code != "version_inactive" || !strings.Contains(string(a.Raw), "version 3") || !strings.Contains(string(a.Raw), "n3") {
			t.Fatalf("%s %s %s at version 2: %d %s", req.method, req.path, req.body, a.Status, a.Raw)
		}
	}
	if v := c.Nodes[0].FSM().Lock("v3/a"); v.Held || c.Nodes[0].FSM().LeaseCount() != 0 {
		t.Fatal("a refused request applied something")
	}
	if a := hc.Do(http.MethodPut, url+"/v1/locks/v3/a", `{}`); a.Status != 200 {
		t.Fatalf("a version 2 acquire: %d %s", a.Status, a.Raw)
	}
	cfg := c.Config(2)
	cfg.MaxVersion = 0
	c.SetConfig(2, cfg)
	c.RestartNode(2)
	c.WaitFor(30*time.Second, "protocol version 3", func() bool { return c.Nodes[0].FSM().Version() >= 3 })
	if a := hc.Do(http.MethodPost, url+"/v1/locksets", `{"names":["v3/b","v3/c"],"max_hold_ms":60000}`); a.Status != 200 {
		t.Fatalf("lockset at version 3: %d %s", a.Status, a.Raw)
	}
	if a := hc.Do(http.MethodPut, url+"/v1/semaphores/v3/s", `{"limit":2,"max_hold_ms":60000}`); a.Status != 200 {
		t.Fatalf("semaphore with a maximum hold at version 3: %d %s", a.Status, a.Raw)
	}
	if a := hc.Do(http.MethodPost, url+"/v1/locksets", `{"names":[]}`); a.Status != 400 {
		t.Fatalf("empty lockset: %d %s", a.Status, a.Raw)
	}
	if a := hc.Do(http.MethodPut, url+"/v1/locks/v3/d", `{"mode":"shared","lock_delay_ms":100}`); a.Status != 400 {
		t.Fatalf("shared with a lock delay: %d %s", a.Status, a.Raw)
	}
}

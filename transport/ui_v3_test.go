package transport_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/transport"
)

// The overview carries what the dashboard shows of protocol version 3: a grant's maximum
// hold end (max_hold_remaining_ms) and a lock delay's (lock_delay_remaining_ms), and the
// page reads both.
func TestOverview_MaxHoldAndLockDelay(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	c.WaitFor(30*time.Second, "protocol version 3", func() bool { return c.Nodes[0].FSM().Version() >= 3 })
	c.WaitForwarding()
	hc := rawhttp.Client{}
	url := c.Endpoints()[0]
	if a := hc.Do(http.MethodPut, url+"/v1/locks/d/held", `{"ttl_ms":60000,"max_hold_ms":60000}`); a.Status != 200 {
		t.Fatalf("acquire with a maximum hold: %d %s", a.Status, a.Raw)
	}
	var g api.Grant
	a := hc.Do(http.MethodPut, url+"/v1/locks/d/delayed", `{"ttl_ms":60000,"lock_delay_ms":60000}`)
	if a.Status != 200 || json.Unmarshal(a.Raw, &g) != nil {
		t.Fatalf("acquire with a lock delay: %d %s", a.Status, a.Raw)
	}
	if a := hc.Do(http.MethodDelete, url+"/v1/leases/"+g.LeaseID, ``); a.Status/100 != 2 {
		t.Fatalf("revoke: %d %s", a.Status, a.Raw)
	}
	var o api.Overview
	c.WaitFor(10*time.Second, "the overview to show the maximum hold and the lock delay", func() bool {
		a := hc.Do(http.MethodGet, url+"/v1/overview?prefix=d/", ``)
		if a.Status != 200 || json.Unmarshal(a.Raw, &o) != nil {
			return false
		}
		var hold, delay bool
		for _, l := range o.Locks {
			hold = hold || l.Name == "d/held" && l.MaxHoldRemainingMs > 0
			delay = delay || l.Name == "d/delayed" && l.LockDelayRemainingMs > 0 && !l.Held
		}
		return hold && delay
	})
	js, err := transport.UIFile("app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"max_hold_remaining_ms", "lock_delay_remaining_ms"} {
		if !strings.Contains(string(js), "l."+field) {
			t.Errorf("the dashboard does not read %s", field)
		}
	}
}

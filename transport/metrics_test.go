package transport_test

import (
	"strings"
	"testing"

	"github.com/raftlock/raftlock/api"
)

// usageGauges are /metrics' counts of the cluster's usage, which with ACLs on only a
// token with admin on the empty prefix reads (the overview's lease counts likewise).
var usageGauges = []string{"raftlock_leases ", "raftlock_locks_held ", "raftlock_semaphores_in_use ", "raftlock_semaphore_permits ", "raftlock_elections_led ", "raftlock_grants_total ", "raftlock_handovers_total ", "raftlock_renew_entries_total ",
	// The answers by route and status (a route's 200s count its grants, its token
	// creations) and the forwards, which count usage as well.
	`raftlock_http_requests_total{code="200",route="PUT /v1/locks/{name...}"} `, `raftlock_http_requests_total{code="200",route="POST /v1/acl/tokens"} `, "raftlock_forwarded_requests_total "}

// openToAll are /metrics' series that stay open: the node's health, the commit index (a
// token holder reads it in every token) and the latency histograms, which the dashboard's
// p99 chart reads with any token.
var openToAll = []string{"raftlock_raft_term ", "raftlock_raft_commit_index ", `raftlock_http_request_duration_seconds_bucket{route="PUT /v1/locks/{name...}",le="+Inf"} `}

// With ACLs on, /metrics and the overview tell a caller without admin on the empty prefix
// the same about the cluster's usage: nothing (no gauge, no count of answers by route, no
// count of forwards; "withheld": true), whether it has no token, a read token or a lock
// token; an admin sees both. /metrics stays open, with the node's health and latencies.
func TestACL_MetricsWithholdWhatTheOverviewWithholds(t *testing.T) {
	c := startACLCluster(t)
	m, toks := aclSetup(t, c, map[string]string{"a-lock": `{"rules":[{"prefix":"a/","access":"lock"}]}`, "all-read": `{"rules":[{"prefix":"","access":"read"}]}`})
	l := c.URL(c.Leader(10e9))
	if st, code := callAs(t, toks["a-lock"], "PUT", l+"/v1/locks/a/1", `{"ttl_ms":60000}`, nil); st != 200 {
		t.Fatalf("acquire: %d %s", st, code)
	}
	for _, who := range []string{"", toks["a-lock"], toks["all-read"], m} {
		admin := who == m
		metrics := getRaw(t, who, l+"/metrics")
		for _, g := range openToAll {
			if !strings.Contains(metrics, "\n"+g) {
				t.Errorf("admin %v: /metrics without %s", admin, g)
			}
		}
		for _, g := range usageGauges {
			if strings.Contains(metrics, "\n"+g) != admin {
				t.Errorf("admin %v: /metrics shows %s: %v", admin, g, !admin)
			}
		}
		if admin && !strings.Contains(metrics, "\nraftlock_leases 1\n") {
			t.Errorf("admin's /metrics: no raftlock_leases 1")
		}
		if who == "" {
			continue // the overview needs a token
		}
		var o api.Overview
		if st, code := callAs(t, who, "GET", l+"/v1/overview", "", &o); st != 200 {
			t.Fatalf("overview: %d %s", st, code)
		}
		if o.Leases.Withheld == admin || (admin && o.Leases.Count != 1) {
			t.Errorf("admin %v: overview leases %+v", admin, o.Leases)
		}
	}
}

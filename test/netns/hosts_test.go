package netns_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// Three "hosts", each a network namespace with its own address, run one node each bound
// to 0.0.0.0 with --http-advertise and --raft-advertise naming the host's address.
// Every node becomes ready, and a write sent to each node succeeds: the followers
// forward to the leader's advertised HTTP address across the bridge, which 0.0.0.0 could
// never have named. A node started on 0.0.0.0 without --http-advertise refuses to start
// and says which flag is missing.
func TestNetns_ThreeHostsBoundToAnyAddress(t *testing.T) {
	start := time.Now()
	const n = 3
	nw := newNetwork(t, n)
	c := newCluster(t, nw)

	// Before the real nodes take the ports: serve on 0.0.0.0 without --http-advertise,
	// inside the first namespace so that nothing could bind in the root namespace even if
	// the check were missing.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := nw.command(ctx, 0, testcluster.Binary(t), "serve", "--id", "n1", "--http-addr", "0.0.0.0:"+httpPort,
		"--raft-addr", "0.0.0.0:"+raftPort, "--raft-advertise", c.RaftAddr(0),
		"--data-dir", filepath.Join(t.TempDir(), "n1"), "--bootstrap", c.Bootstrap())
	cmd.Env = nodeEnv()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if ctx.Err() != nil || !errors.As(err, &exit) {
		t.Fatalf("serve --http-addr 0.0.0.0:%s without --http-advertise did not refuse to start (err %v):\n%s", httpPort, err, out)
	}
	if !strings.Contains(string(out), "--http-advertise") {
		t.Fatalf("serve on 0.0.0.0 without --http-advertise exited %d, but its message does not name --http-advertise:\n%s", exit.ExitCode(), out)
	}
	t.Logf("serve on 0.0.0.0 without --http-advertise: exit %d: %s", exit.ExitCode(), strings.TrimSpace(string(out)))

	c.StartAll()
	sec := newSecrets()
	cl := newClient("http", nil, sec)
	leader := waitReady(t, c, cl, 30*time.Second)

	// Every node is known by its advertised addresses, never by 0.0.0.0 (followers
	// register their HTTP addresses with the leader shortly after it takes office).
	var want []string
	for i := 0; i < n; i++ {
		want = append(want, fmt.Sprintf("n%d@%s/%s/voter=true", i+1, c.RaftAddr(i), c.HTTPAddr(i)))
	}
	var members string
	testkit.WaitFor(t, 15*time.Second, "every node's advertised addresses in the membership", func() bool {
		v, err := cl.view(c.HTTPAddr(leader))
		members = v.members()
		return err == nil && members == fmt.Sprint(want)
	})
	if strings.Contains(members, "0.0.0.0") {
		t.Fatalf("membership names 0.0.0.0: %s", members)
	}

	writes := 0
	for i := 0; i < n; i++ {
		lease := cl.do("POST", c.HTTPAddr(i), "/v1/leases", `{"ttl_ms":30000}`)
		if lease.Status != 201 {
			c.DumpLogs()
			t.Fatalf("create a lease through n%d (leader n%d): %v", i+1, leader+1, lease)
		}
		id := lease.Body["lease_id"].(string)
		grant := cl.do("PUT", c.HTTPAddr(i), fmt.Sprintf("/v1/locks/hosts/n%d", i+1), fmt.Sprintf(`{"lease_id":%q,"owner":"via-n%d"}`, id, i+1))
		if grant.Status != 200 {
			c.DumpLogs()
			t.Fatalf("acquire through n%d (leader n%d): %v", i+1, leader+1, grant)
		}
		// A follower's read is forwarded too; the answer comes from the leader.
		st := cl.do("GET", c.HTTPAddr((i+1)%n), fmt.Sprintf("/v1/locks/hosts/n%d", i+1), "")
		if st.Status != 200 || st.Body["token"] != grant.Body["token"] || st.Body["owner"] != fmt.Sprintf("via-n%d", i+1) {
			t.Fatalf("status through n%d after acquiring through n%d: %v, want token %v", (i+1)%n+1, i+1, st, grant.Body["token"])
		}
		writes += 2
	}
	leases, _ := sec.list()
	checkLogs(t, c, leases, nil)

	// The attack suite's negative control: without TLS, hashicorp/raft's own transport
	// reaches a node's Raft port across the bridge, and a stranger's TimeoutNow is obeyed
	// (the node starts an election: its term moves). So when the suite sees the same RPCs
	// refused, TLS refused them, not an attacker that could not reach Raft at all.
	f := (leader + 1) % n
	before, err := cl.view(c.HTTPAddr(f))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := newAttackTransport(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := sendTimeoutNow(tr, c.ID(f), c.RaftAddr(f)); err != nil {
		t.Fatalf("negative control: TimeoutNow over plaintext to n%d without TLS failed: %v", f+1, err)
	}
	testkit.WaitFor(t, 10*time.Second, "n"+fmt.Sprint(f+1)+"'s term to move after a stranger's TimeoutNow (no TLS)", func() bool {
		v, err := cl.view(c.HTTPAddr(f))
		return err == nil && v.Term > before.Term
	})
	t.Logf("negative control: without TLS a stranger's TimeoutNow to n%d was obeyed (term moved past %d)", f+1, before.Term)
	t.Logf("hosts: %d nodes on 0.0.0.0 ready, %d writes through every node succeeded, %d lease IDs checked against the logs, in %v",
		n, writes, len(leases), time.Since(start).Round(time.Millisecond))
}

// checkLogs fails the test if any node's log (stdout and stderr) contains one of the lease
// IDs or ACL secrets: both are bearer secrets.
func checkLogs(t *testing.T, c *testcluster.Processes, leases, aclKeys []string) {
	t.Helper()
	for i := range c.N() {
		log := c.Log(i)
		if log == "" {
			t.Errorf("n%d's log is empty; the check would prove nothing", i+1)
		}
		for _, id := range leases {
			if strings.Contains(log, id) {
				t.Errorf("n%d's log contains lease ID %s", i+1, id)
			}
		}
		for _, s := range aclKeys {
			if strings.Contains(log, s) {
				t.Errorf("n%d's log contains an ACL secret", i+1)
			}
		}
	}
}

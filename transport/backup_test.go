package transport_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/test/testcluster"
)

// GET /v1/backup through a follower is forwarded to the leader and answers a backup
// file that verifies, holds the state at or after every earlier grant, and decodes.
func TestAPI_BackupThroughFollower(t *testing.T) {
	c := testcluster.StartInProcess(t, 3, nil)
	c.WaitForwarding()
	f := c.URL(c.Follower())
	var g api.Grant
	if st, code := call(t, "PUT", f+"/v1/locks/accounts/A", `{"owner":"w"}`, &g); st != 200 {
		t.Fatalf("acquire: %d %s", st, code)
	}
	// /v1/snapshot is the older name of /v1/backup: both answer the same file.
	for _, path := range []string{"/v1/backup", "/v1/snapshot"} {
		checkBackup(t, f+path, g.Token)
	}
	if st, code := call(t, "GET", f+"/v1/snapshot?x=1", "", nil); st != 400 || code != api.CodeInvalidArgument {
		t.Fatalf("unknown query: %d %s", st, code)
	}
	if st, code := call(t, "POST", f+"/v1/snapshot", "", nil); st != 405 {
		t.Fatalf("POST /v1/snapshot: %d %s", st, code)
	}
}

// checkBackup fetches url and checks the backup file it answers against a grant's token.
func checkBackup(t *testing.T, url string, token uint64) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != api.BackupContentType {
		t.Fatalf("GET %s: %d %q %.200s", url, resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	h, state, err := api.ReadBackup(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := fsm.InspectSnapshot(state)
	if err != nil {
		t.Fatal(err)
	}
	if h.Index < token || sum.Index != h.Index || sum.ClusterTimeMs != h.ClusterTimeMs || sum.ProtocolVersion != h.ProtocolVersion || sum.Locks != 1 {
		t.Fatalf("header %+v, state %+v, grant token %d", h, sum, token)
	}
	if _, err := time.Parse(time.RFC3339, h.Created); err != nil {
		t.Fatalf("created %q: %v", h.Created, err)
	}
}

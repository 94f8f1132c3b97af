package netns_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// client is what the test sends requests with: an HTTP client (never through a proxy), an
// optional ACL token, and the set that every lease ID and ACL secret seen in an answer is
// added to, for the log check at the end.
type client struct {
	rawhttp.Client
	scheme string
}

// newClient returns a client for scheme ("http" or "https"); tlsCfg may be nil.
func newClient(scheme string, tlsCfg *tls.Config, s *secrets) *client {
	tr := &http.Transport{Proxy: nil, TLSClientConfig: tlsCfg, DisableKeepAlives: true}
	c := &client{Client: rawhttp.Client{HTTP: &http.Client{Timeout: 30 * time.Second, Transport: tr}}, scheme: scheme}
	if s != nil {
		c.Seen = func(a rawhttp.Answer) { s.collect(a.Body) }
	}
	return c
}

// withToken returns a copy of c that sends token as its bearer token.
func (c *client) withToken(token string) *client {
	cp := *c
	cp.Token = token
	return &cp
}

// do sends a request to addr (host:port) and records any lease ID or secret in the answer.
func (c *client) do(method, addr, path, body string, header ...string) rawhttp.Answer {
	return c.Do(method, c.scheme+"://"+addr+path, body, header...)
}

// secrets collects the lease IDs and ACL secret IDs the cluster handed out.
type secrets struct {
	mu      sync.Mutex
	leases  map[string]bool
	aclKeys map[string]bool
}

func newSecrets() *secrets {
	return &secrets{leases: map[string]bool{}, aclKeys: map[string]bool{}}
}

var leaseIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

func (s *secrets) collect(body map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := body["lease_id"].(string); ok && leaseIDPattern.MatchString(id) {
		s.leases[id] = true
	}
	if id, ok := body["secret_id"].(string); ok && id != "" {
		s.aclKeys[id] = true
	}
}

// list returns the collected lease IDs and ACL secrets, sorted.
func (s *secrets) list() (leases, aclKeys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.leases {
		leases = append(leases, id)
	}
	for id := range s.aclKeys {
		aclKeys = append(aclKeys, id)
	}
	sort.Strings(leases)
	sort.Strings(aclKeys)
	return leases, aclKeys
}

// clusterView is the part of GET /v1/cluster the tests compare.
type clusterView struct {
	LeaderID string `json:"leader_id"`
	Term     uint64 `json:"term"`
	Nodes    []struct {
		ID       string `json:"id"`
		RaftAddr string `json:"raft_addr"`
		HTTPAddr string `json:"http_addr"`
		Voter    bool   `json:"voter"`
	} `json:"nodes"`
}

// members renders the membership as one comparable string.
func (v clusterView) members() string {
	var out []string
	for _, n := range v.Nodes {
		out = append(out, fmt.Sprintf("%s@%s/%s/voter=%v", n.ID, n.RaftAddr, n.HTTPAddr, n.Voter))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

// view fetches GET /v1/cluster from addr.
func (c *client) view(addr string) (clusterView, error) {
	var v clusterView
	a := c.do("GET", addr, "/v1/cluster", "")
	if !a.OK() {
		return v, fmt.Errorf("GET /v1/cluster on %s: %v", addr, a)
	}
	return v, json.Unmarshal([]byte(string(a.Raw)), &v)
}

// waitReady polls every node's /readyz until all answer 200, then returns the index of the
// node every node names as leader.
func waitReady(t *testing.T, c *testcluster.Processes, cl *client, timeout time.Duration) int {
	t.Helper()
	leader := -1
	if !testkit.Poll(timeout, 50*time.Millisecond, func() bool {
		var ok bool
		ok, leader = readyLeader(c, cl)
		return ok
	}) {
		c.DumpLogs()
		t.Fatalf("the nodes were not all ready with one leader within %v", timeout)
	}
	return leader
}

// readyLeader reports whether every running node answers /readyz 200 and names the same
// leader, and which node that is.
func readyLeader(c *testcluster.Processes, cl *client) (bool, int) {
	leader := ""
	for i := range c.N() {
		if !c.Running(i) {
			continue
		}
		if a := cl.do("GET", c.HTTPAddr(i), "/readyz", ""); a.Status != 200 {
			return false, -1
		}
		v, err := cl.view(c.HTTPAddr(i))
		if err != nil || v.LeaderID == "" || (leader != "" && v.LeaderID != leader) {
			return false, -1
		}
		leader = v.LeaderID
	}
	for i := range c.N() {
		if c.ID(i) == leader {
			return true, i
		}
	}
	return false, -1
}

package netns_test

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/raftlock/raftlock/cluster/clustertest"
)

// client is what the test sends requests with: an HTTP client (never through a proxy), an
// optional ACL token, and the set that every lease ID and ACL secret seen in an answer is
// added to, for the log check at the end.
type client struct {
	hc      *http.Client
	scheme  string
	token   string
	secrets *secrets
}

// newClient returns a client for scheme ("http" or "https"); tlsCfg may be nil.
func newClient(scheme string, tlsCfg *tls.Config, s *secrets) *client {
	tr := &http.Transport{Proxy: nil, TLSClientConfig: tlsCfg, DisableKeepAlives: true}
	return &client{hc: &http.Client{Timeout: 30 * time.Second, Transport: tr}, scheme: scheme, secrets: s}
}

// withToken returns a copy of c that sends token as its bearer token.
func (c *client) withToken(token string) *client {
	cp := *c
	cp.token = token
	return &cp
}

// answer is one response, decoded.
type answer struct {
	status int
	body   map[string]any
	raw    string
	err    error
}

func (a answer) code() string {
	if e, ok := a.body["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

func (a answer) String() string {
	if a.err != nil {
		return "error: " + a.err.Error()
	}
	return fmt.Sprintf("%d %s", a.status, a.raw)
}

func (a answer) ok() bool { return a.err == nil && a.status >= 200 && a.status < 300 }

// do sends a request to addr (host:port) and records any lease ID or secret in the answer.
func (c *client) do(method, addr, path, body string, header ...string) answer {
	req, err := http.NewRequest(method, c.scheme+"://"+addr+path, bytes.NewBufferString(body))
	if err != nil {
		return answer{err: err}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a := answer{status: resp.StatusCode, raw: string(bytes.TrimSpace(raw))}
	_ = json.Unmarshal(raw, &a.body)
	if c.secrets != nil {
		c.secrets.collect(a.body)
	}
	return a
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
	if !a.ok() {
		return v, fmt.Errorf("GET /v1/cluster on %s: %v", addr, a)
	}
	return v, json.Unmarshal([]byte(a.raw), &v)
}

// waitReady polls every node's /readyz until all answer 200, then returns the index of the
// node every node names as leader.
func waitReady(t *testing.T, c *cluster, cl *client, timeout time.Duration) int {
	t.Helper()
	leader := -1
	ok := false
	deadline := time.Now().Add(timeout)
	for !ok && time.Now().Before(deadline) {
		ok, leader = readyLeader(c, cl)
		if !ok {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !ok {
		c.dumpLogs()
		t.Fatalf("the nodes were not all ready with one leader within %v", timeout)
	}
	return leader
}

// readyLeader reports whether every running node answers /readyz 200 and names the same
// leader, and which node that is.
func readyLeader(c *cluster, cl *client) (bool, int) {
	leader := ""
	for i := range c.procs {
		c.mu.Lock()
		alive := c.procs[i] != nil
		c.mu.Unlock()
		if !alive {
			continue
		}
		if a := cl.do("GET", c.HTTPAddr(i), "/readyz", ""); a.status != 200 {
			return false, -1
		}
		v, err := cl.view(c.HTTPAddr(i))
		if err != nil || v.LeaderID == "" || (leader != "" && v.LeaderID != leader) {
			return false, -1
		}
		leader = v.LeaderID
	}
	for i := range c.procs {
		if c.id(i) == leader {
			return true, i
		}
	}
	return false, -1
}

// waitFor polls cond with a deadline.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	clustertest.WaitFor(t, timeout, what, cond)
}

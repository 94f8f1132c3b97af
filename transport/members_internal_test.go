package transport

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/test/rawhttp"
	"github.com/raftlock/raftlock/tlsconf"
	"github.com/raftlock/raftlock/tlsconf/tlstest"
)

// fakeMembers is the Membership of three members n1-n3 at fixed Raft addresses; it
// records the registrations and version claims it was asked to make.
type fakeMembers struct {
	Membership
	mu       sync.Mutex
	added    []string // "id http_addr"
	versions []string // "id v"
}

func (*fakeMembers) Has(id string) bool { return id == "n1" || id == "n2" || id == "n3" }

func (f *fakeMembers) RaftAddr(id string) (string, bool) {
	if !f.Has(id) {
		return "", false
	}
	return "10.0.0." + id[1:] + ":8001", true
}

func (f *fakeMembers) Add(_ context.Context, info cluster.NodeInfo, _ bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.added = append(f.added, info.ID+" "+info.HTTPAddr)
	return nil
}

func (f *fakeMembers) RegisterVersion(_ context.Context, id string, v uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions = append(f.versions, fmt.Sprintf("%s %d", id, v))
	return nil
}

func (f *fakeMembers) took() (added, versions []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	added, versions = f.added, f.versions
	f.added, f.versions = nil, nil
	return added, versions
}

// noTokensACL is an ACL store (and the identities of its tokens) that is bootstrapped and
// knows no token: every caller is the anonymous identity, which has no rights.
type noTokensACL struct {
	ACLStore
	Identities
}

func (noTokensACL) Bootstrapped() bool                         { return true }
func (noTokensACL) Resolve(string) (cluster.ACLIdentity, bool) { return cluster.ACLIdentity{}, false }
func (noTokensACL) Anonymous() cluster.ACLIdentity             { return cluster.ACLIdentity{} }
func (noTokensACL) Revoked(string) (<-chan struct{}, func())   { return nil, func() {} }
func (noTokensACL) Token(string) (cluster.ACLTokenView, bool)  { return cluster.ACLTokenView{}, false }
func (noTokensACL) Policies() []cluster.ACLPolicyView          { return nil }
func (noTokensACL) Tokens() []cluster.ACLTokenView             { return nil }
func (noTokensACL) Bootstrap(context.Context) (cluster.ACLToken, error) {
	return cluster.ACLToken{}, nil
}

// A member's certificate speaks for that member only. The leader n1
// serves HTTPS with its node certificate; n2's certificate sends n1's registration and
// version claim with X-Raftlock-Hops: 1 and X-Raftlock-Node: n1, as a relay of n1's own
// call would be sent: refused (403 with ACLs off; 401 with ACLs on and no token), and
// nothing reaches the membership. So is n3 relaying n2's own registration (the leader
// cannot tell a true relay from a false one). n2 registering itself, directly or with a
// hop header naming itself, is accepted.
func TestMembers_NodeSpeaksOnlyForItself(t *testing.T) {
	ca := tlstest.NewCA(t, "")
	files := ca.WriteNode(t, tlsconf.NodeCertOptions{ID: "n1"})
	files.ClientAuth = tlsconf.ClientAuthNone
	rl, err := tlsconf.NewReloader(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	as := map[string]rawhttp.Client{}
	for _, id := range []string{"n2", "n3"} {
		cert := ca.NodeKeyPair(t, id)
		as[id] = rawhttp.Client{HTTP: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: ca.ClientConfig(&cert)}}}
	}
	client := ca.ClientKeyPair(t, "worker")
	as["a client"] = rawhttp.Client{HTTP: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: ca.ClientConfig(&client)}}}

	reg := func(id, http string) string {
		return fmt.Sprintf(`{"id":%q,"raft_addr":"10.0.0.%s:8001","http_addr":%q,"registration":true}`, id, id[1:], http)
	}
	relay := func(as string) []string { return []string{"X-Raftlock-Hops", "1", "X-Raftlock-Node", as} }
	for _, acl := range []bool{false, true} {
		t.Run(fmt.Sprintf("acl=%v", acl), func(t *testing.T) {
			members := &fakeMembers{}
			svc := Services{Routing: leaderRouting{}, Members: members}
			if acl {
				svc.ACL, svc.Identities = noTokensACL{}, noTokensACL{}
			}
			s, err := NewServer(Config{Services: stubRoles(svc), TLS: rl, ACL: acl, Logger: hclog.NewNullLogger()})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewUnstartedServer(s.Handler())
			ts.TLS = rl.ServerConfig()
			ts.StartTLS()
			defer ts.Close()
			refused, code := 403, "permission_denied"
			if acl {
				refused, code = 401, "unauthenticated"
			}
			for _, c := range []struct {
				what, as, method, path, body string
				header                       []string
				status                       int
				code                         string
				added, versions              string
			}{
				{"n2 registers n1's address, relaying for n1", "n2", "POST", "/v1/cluster/nodes", reg("n1", "10.0.0.2:9999"), relay("n1"), refused, code, "", ""},
				{"n2 claims n1's version, relaying for n1", "n2", "PUT", "/v1/cluster/nodes/n1/version", `{"max_version":1}`, relay("n1"), refused, code, "", ""},
				{"n2 registers n1's address directly", "n2", "POST", "/v1/cluster/nodes", reg("n1", "10.0.0.2:9999"), nil, refused, code, "", ""},
				{"n2 claims n1's version directly", "n2", "PUT", "/v1/cluster/nodes/n1/version", `{"max_version":1}`, nil, refused, code, "", ""},
				{"n3 relays n2's own registration", "n3", "POST", "/v1/cluster/nodes", reg("n2", "10.0.0.2:7001"), relay("n2"), refused, code, "", ""},
				{"n3 relays n2's own version claim", "n3", "PUT", "/v1/cluster/nodes/n2/version", `{"max_version":4}`, relay("n2"), refused, code, "", ""},
				{"a client certificate relays for n1", "a client", "POST", "/v1/cluster/nodes", reg("n1", "10.0.0.2:9999"), relay("n1"), refused, code, "", ""},
				{"n2 registers itself", "n2", "POST", "/v1/cluster/nodes", reg("n2", "10.0.0.2:7001"), nil, 200, "", "n2 10.0.0.2:7001", ""},
				{"n2 claims its own version", "n2", "PUT", "/v1/cluster/nodes/n2/version", `{"max_version":4}`, nil, 200, "", "", "n2 4"},
				{"n2 registers itself with a hop header naming itself", "n2", "POST", "/v1/cluster/nodes", reg("n2", "10.0.0.2:7001"), relay("n2"), 200, "", "n2 10.0.0.2:7001", ""},
				{"n2 claims its own version with a hop header naming itself", "n2", "PUT", "/v1/cluster/nodes/n2/version", `{"max_version":4}`, relay("n2"), 200, "", "", "n2 4"},
			} {
				a := as[c.as].Do(c.method, ts.URL+c.path, c.body, c.header...)
				added, versions := members.took()
				if a.Status != c.status || a.Code() != c.code || strings.Join(added, ",") != c.added || strings.Join(versions, ",") != c.versions {
					t.Errorf("%s: %v; the membership was asked to add %q and record versions %q, want %d %q, %q and %q",
						c.what, a, added, versions, c.status, c.code, c.added, c.versions)
				}
			}
		})
	}
}

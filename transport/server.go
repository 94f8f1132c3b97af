package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/budget"
	"github.com/raftlock/raftlock/tlsconf"
)

// Node is what the server needs of a cluster node; *cluster.Node satisfies it.
type Node interface {
	ID() string
	CreateLease(ctx context.Context, ttl int64) (fsm.LeaseID, error)
	KeepAlive(ctx context.Context, id fsm.LeaseID) (int64, error)
	// KeepAliveMany renews many leases in one Renew entry: per lease, its TTL and whether
	// it exists.
	KeepAliveMany(ctx context.Context, ids []fsm.LeaseID) ([]int64, []bool, error)
	Revoke(ctx context.Context, id fsm.LeaseID) ([]string, error)
	Lease(ctx context.Context, id fsm.LeaseID, stale bool) (fsm.LeaseView, error)
	Acquire(ctx context.Context, req cluster.AcquireRequest) (cluster.Grant, error)
	Release(ctx context.Context, name string, lease fsm.LeaseID, token uint64) error
	LockStatus(ctx context.Context, name string, stale bool, waitIndex uint64, wait time.Duration) (fsm.LockView, error)
	Locks(ctx context.Context, prefix, after string, limit int, stale bool) ([]fsm.LockView, bool, error)
	SemaphoreAcquire(ctx context.Context, req cluster.SemaphoreRequest) (cluster.SemaphoreGrant, error)
	SemaphoreRelease(ctx context.Context, name string, lease fsm.LeaseID, token uint64) error
	SemaphoreStatus(ctx context.Context, name string, stale bool, waitIndex uint64, wait time.Duration) (fsm.SemaphoreView, error)
	Campaign(ctx context.Context, req cluster.CampaignRequest) (cluster.ElectionGrant, error)
	Resign(ctx context.Context, name string, lease fsm.LeaseID, token uint64) error
	ElectionStatus(ctx context.Context, name string, stale bool, waitIndex uint64, wait time.Duration) (fsm.ElectionView, error)
	Status() cluster.Status
	AddVoter(ctx context.Context, info fsm.NodeInfo, replace bool) error
	MemberRaftAddr(id string) (string, bool)
	RemoveServer(ctx context.Context, id string) error
	TransferLeadership(ctx context.Context, to string) (string, error)
	LeaderHTTPAddr() string
	LeaderWatch() (string, <-chan struct{})
	ElectionTimeout() time.Duration
	IsLeader() bool
	Ready() bool
	Serving() string
	StorageErr() error
	NeedsRegistration() bool
	NeedsVersionRegistration() bool
	MaxVersion() uint64
	RegisterVersion(ctx context.Context, id string, v uint64) error
	ACLBootstrap(ctx context.Context) (cluster.ACLToken, error)
	ACLSetPolicy(ctx context.Context, name, description string, rules []fsm.ACLRule) error
	ACLDeletePolicy(ctx context.Context, name string) error
	ACLCreateToken(ctx context.Context, description string, policies []string) (cluster.ACLToken, error)
	ACLDeleteToken(ctx context.Context, accessor string) error
	ACLResolve(secret string) (fsm.ACLIdentity, bool)
	ACLAnonymous() fsm.ACLIdentity
	ACLBootstrapped() bool
	ACLPolicies() []fsm.ACLPolicyView
	ACLTokens() []fsm.ACLTokenView
	ACLTokenView(accessor string) (fsm.ACLTokenView, bool)
	SelfInfo() fsm.NodeInfo
	MetricsSnapshot() map[string]float64
	Backup(ctx context.Context) ([]byte, fsm.SnapshotSummary, error)
}

// Config configures a Server. Zero values mean the documented defaults.
type Config struct {
	// Addr is the listen address (host:port). Required unless a listener is passed to Serve.
	Addr string
	// Node is the cluster node served: a *cluster.Node or a Node. Required.
	Node any
	// Logger receives the server's logs; nil means hclog's default.
	Logger hclog.Logger
	// MaxHops bounds how many times a request is forwarded; zero means 2. A request that
	// arrives at a non-leader with the limit spent gets 503 no_leader: the nodes disagree
	// about who leads, which resolves within an election.
	MaxHops int
	// ForwardMargin is added to the node's election timeout (and to a request's own wait)
	// to bound how long a forwarded request may go unanswered; zero means 2 s. A forward is
	// abandoned earlier when leadership moves away from the node it went to.
	ForwardMargin time.Duration
	// MaxHeldRequests bounds the waiting acquires and blocking queries this node holds
	// open at once (each is a goroutine and a connection); zero means 10000. Past it a new
	// one gets 429 too_many_requests.
	MaxHeldRequests int
	// TLS, when non-nil, serves HTTPS with its server configuration, and forwards to
	// other nodes over mutual TLS with its node certificate.
	TLS *tlsconf.Reloader
	// ACL turns on ACL enforcement: every API request needs a bearer token whose policies
	// grant the right it needs (see transport/acl.go); /healthz, /readyz and /metrics stay
	// open, and POST /v1/acl/bootstrap works once.
	ACL bool
	// NodeToken, when set, is the ACL token this node sends on its own calls to the
	// leader (registering its HTTP address and protocol version) when ACLs are on and TLS
	// is off; with TLS, the node certificate proves who it is instead.
	NodeToken string
	// RegisterInterval is how often a follower checks that the state machine holds its
	// HTTP address; zero means 1 s.
	RegisterInterval time.Duration
	// Budget, when non-nil, traces every request for the latency budget (bench/budget):
	// when it began, was decoded, was forwarded and was answered. nil (the default) traces
	// nothing and costs a nil check in the lock handlers.
	Budget *budget.Recorder
}

// Server serves the HTTP API for one node.
type Server struct {
	cfg    Config
	node   Node
	log    hclog.Logger
	http   *http.Server
	mux    *http.ServeMux
	fwd    *http.Client
	met    *metrics
	held   *limiter
	cancel context.CancelFunc
	done   chan struct{}
}

// hopHeader counts how many times a request has been forwarded.
const hopHeader = "X-Raftlock-Hops"

// nodeHeader names the node a forwarded request came from. It is believed only when the
// connection it arrives on is itself authenticated by a node certificate (a node vouching
// for a node it has verified); from anyone else it is ignored.
const nodeHeader = "X-Raftlock-Node"

// scheme is the URL scheme other nodes' APIs speak.
func (s *Server) scheme() string {
	if s.cfg.TLS != nil {
		return "https://"
	}
	return "http://"
}

// callerNode returns the ID of the node that sent r, as proven by a verified node
// certificate on the connection (or vouched for by such a node), or "".
func (s *Server) callerNode(r *http.Request) string {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.PeerCertificates) == 0 {
		return ""
	}
	id, ok := tlsconf.NodeIDFromCert(r.TLS.PeerCertificates[0])
	if !ok {
		return ""
	}
	if v := r.Header.Get(nodeHeader); v != "" {
		return v
	}
	return id
}

// NewServer builds a server; call Serve or ListenAndServe to start it.
func NewServer(cfg Config) (*Server, error) {
	var node Node
	switch v := cfg.Node.(type) {
	case *cluster.Node:
		node = nodeAdapter{v}
	case Node:
		node = v
	default:
		return nil, errors.New("transport: config: Node is required")
	}
	if cfg.MaxHops == 0 {
		cfg.MaxHops = 2
	}
	if cfg.ForwardMargin == 0 {
		cfg.ForwardMargin = 2 * time.Second
	}
	if cfg.MaxHeldRequests == 0 {
		cfg.MaxHeldRequests = 10000
	}
	if cfg.RegisterInterval == 0 {
		cfg.RegisterInterval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.Default()
	}
	s := &Server{cfg: cfg, node: node, log: cfg.Logger.Named("http"), mux: http.NewServeMux(), done: make(chan struct{}), held: newLimiter(cfg.MaxHeldRequests)}
	ht := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
	}
	if cfg.TLS != nil {
		ht.TLSClientConfig = cfg.TLS.PeerClientConfig()
		ht.ForceAttemptHTTP2 = true
	}
	s.fwd = &http.Client{
		Transport: ht,
		// A leader answers; it never redirects. Following a redirect would send the
		// caller's body (lease IDs) wherever a compromised or confused peer points.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	s.met = newMetrics(node)
	s.routes()
	handler := s.met.instrument(s.recoverer(s.forwardUnknownTokens(s.mux)))
	if cfg.Budget != nil {
		handler = s.traced(handler)
	}
	s.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		// A waiting acquire or blocking query may legitimately take MaxWaitMs.
		WriteTimeout:   time.Duration(api.MaxWaitMs)*time.Millisecond + 30*time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       s.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	return s, nil
}

// route is one API route: a ServeMux pattern and its handler.
type route struct {
	pattern string
	handler http.HandlerFunc
}

// apiRoutes lists every route the server registers, in one place, so that the OpenAPI
// document can be checked against it (Routes).
func (s *Server) apiRoutes() []route {
	return []route{
		{"POST /v1/leases", s.handleCreateLease},
		{"POST /v1/leases/{id}/keepalive", s.handleKeepAlive},
		{"POST /v1/leases/keepalive", s.handleKeepAliveBody},
		{"POST /v1/leases/lookup", s.handleLookupLeaseBody},
		{"POST /v1/leases/revoke", s.handleRevokeBody},
		{"GET /v1/leases/{id}", s.handleGetLease},
		{"DELETE /v1/leases/{id}", s.handleRevoke},
		{"PUT /v1/locks/{name...}", s.handleAcquire},
		{"DELETE /v1/locks/{name...}", s.handleRelease},
		{"GET /v1/locks/{name...}", s.handleLockStatus},
		{"GET /v1/locks", s.handleListLocks},
		{"PUT /v1/semaphores/{name...}", s.handleSemaphoreAcquire},
		{"DELETE /v1/semaphores/{name...}", s.handleSemaphoreRelease},
		{"GET /v1/semaphores/{name...}", s.handleSemaphoreStatus},
		{"PUT /v1/elections/{name...}", s.handleCampaign},
		{"DELETE /v1/elections/{name...}", s.handleResign},
		{"GET /v1/elections/{name...}", s.handleElectionStatus},
		{"GET /v1/cluster", s.handleCluster},
		{"POST /v1/cluster/nodes", s.handleAddNode},
		{"DELETE /v1/cluster/nodes/{id}", s.handleRemoveNode},
		{"PUT /v1/cluster/nodes/{id}/version", s.handleNodeVersion},
		{"POST /v1/cluster/transfer-leader", s.handleTransferLeader},
		{"GET /v1/snapshot", s.handleSnapshot},
		{"POST /v1/acl/bootstrap", s.handleACLBootstrap},
		{"PUT /v1/acl/policies/{name}", s.handleACLSetPolicy},
		{"GET /v1/acl/policies", s.handleACLListPolicies},
		{"GET /v1/acl/policies/{name}", s.handleACLGetPolicy},
		{"DELETE /v1/acl/policies/{name}", s.handleACLDeletePolicy},
		{"POST /v1/acl/tokens", s.handleACLCreateToken},
		{"GET /v1/acl/tokens", s.handleACLListTokens},
		{"DELETE /v1/acl/tokens/{accessor}", s.handleACLDeleteToken},
		{"GET /v1/acl/token/self", s.handleACLTokenSelf},
		{"GET /healthz", s.handleHealthz},
		{"GET /readyz", s.handleReadyz},
		{"GET /metrics", s.met.handler().ServeHTTP},
		{"GET /v1/openapi.json", s.handleOpenAPI},
		{"GET /v1/history/{name...}", s.handleHistory},
		{"GET /v1/events", s.handleEvents},
		{"GET /v1/overview", s.handleOverview},
		{"GET /ui/", s.handleUI},
	}
}

// Routes returns the method and path pattern of every API route, for documentation
// checks.
func (s *Server) Routes() []string {
	var out []string
	for _, r := range s.apiRoutes() {
		out = append(out, r.pattern)
	}
	return out
}

func (s *Server) routes() {
	for _, r := range s.apiRoutes() {
		s.mux.HandleFunc(r.pattern, r.handler)
	}
	s.mux.HandleFunc("/", s.handleUnknown)
}

// Handler returns the server's HTTP handler, for tests that serve it themselves.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Serve serves on l and runs the follower registration loop until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		s.registerLoop(ctx)
	}()
	var err error
	if s.cfg.TLS != nil {
		s.http.TLSConfig = s.cfg.TLS.ServerConfig()
		s.log.Info("serving HTTPS API", "addr", l.Addr().String())
		err = s.http.ServeTLS(l, "", "")
	} else {
		s.log.Info("serving HTTP API", "addr", l.Addr().String())
		err = s.http.Serve(l)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// ListenAndServe listens on cfg.Addr and serves.
func (s *Server) ListenAndServe() error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("transport: listening on %s: %w", s.cfg.Addr, err)
	}
	return s.Serve(l)
}

// Shutdown stops accepting requests and waits for in-flight ones until ctx ends; waiting
// acquires still open then are cut off (their clients retry elsewhere).
func (s *Server) Shutdown(ctx context.Context) error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	err := s.http.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return s.http.Close()
	}
	return err
}

// recoverer turns a panic in a handler into a 500 JSON answer and a log line, so one bad
// request cannot take the node down.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeError(w, fmt.Errorf("handler panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// handleUnknown answers paths no route matches (404) and known paths with the wrong
// method (405), in the API's JSON error form.
func (s *Server) handleUnknown(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		for _, m := range allowed {
			w.Header().Add("Allow", m)
		}
		writeError(w, api.Errorf(api.CodeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	writeError(w, api.Errorf(api.CodeNotFound, "no API route %s %s; see the API table in the README", r.Method, r.URL.Path))
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "node": s.node.ID()})
}

// handleReadyz answers 200 only when a write sent to this node now would be served (it
// is a ready leader) or forwarded (it knows the leader's HTTP address and has caught up).
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	serving := s.node.Serving()
	if serving == "" {
		if err := s.node.StorageErr(); err != nil {
			writeError(w, err)
			return
		}
		writeError(w, api.Errorf(api.CodeNoLeader, "not ready: no ready leader known yet, the leader's HTTP address is not registered, or this node is still catching up"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "node": s.node.ID(), "serving": serving})
}

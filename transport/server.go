package transport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/internal/budget"
	"github.com/raftlock/raftlock/tlsconf"
)

// Config configures a Server. Zero values mean the documented defaults.
type Config struct {
	// Addr is the listen address (host:port). Required unless a listener is passed to Serve.
	Addr string
	// Services are the node's roles the server serves (NodeServices(node) for a
	// *cluster.Node). Every role is required: NewServer names a missing one.
	Services Services
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
	// MaxHeldRequests bounds the waiting acquires, blocking queries and requests held for
	// want of a leader that this node holds open at once (each is a goroutine and a
	// connection); zero means 10000. Past it a new one gets 429 too_many_requests, and a
	// request that would be held for a leader answers its 503 at once.
	MaxHeldRequests int
	// MaxHeldPerIdentity bounds, within MaxHeldRequests, how many of them one caller
	// holds open on this node at once, with ACLs on: one ACL token, or one node, or the
	// anonymous identity (see Server.callerKey; with ACLs off only the node-wide cap
	// applies). Zero means MaxHeldRequests/10 (at least 1). Past it the caller's next one
	// gets 429 too_many_requests.
	MaxHeldPerIdentity int
	// MaxStreamsPerIdentity bounds how many event streams (GET /v1/events) one caller
	// (as for MaxHeldPerIdentity) keeps open on this node, within the node's own cap (cluster.DefaultEventSubscribers
	// unless configured there): zero means 32. Past it the caller's next stream gets 429
	// too_many_requests, so one reader cannot take every stream slot.
	MaxStreamsPerIdentity int
	// HoldTimeout bounds how long this node holds a request that found no leader it could
	// reach (nothing applied), or, when repeating it is idempotent, one whose outcome was
	// ambiguous, before answering its 503: the request is tried again as soon as a leader
	// is known. A waiting request is held at most its own wait. Zero means
	// DefaultHoldTimeout; negative turns holding off (every such request answers at once).
	HoldTimeout time.Duration
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
	// AllowedHosts are names, besides IP addresses, localhost, the node's advertised HTTP
	// host and its certificate's DNS names, that requests may carry in Host (a load
	// balancer's, a Kubernetes Service's). See BrowserPolicy.
	AllowedHosts []string
	// AllowedOrigins are the web origins (scheme://host[:port]) whose pages may call the
	// API besides the node's own dashboard; empty means none. See BrowserPolicy.
	AllowedOrigins []string
	// HTTP2Cleartext also serves HTTP/2 without TLS (prior knowledge): a client that holds
	// many requests open (waiting acquires) can multiplex them on one connection instead
	// of one connection each. With TLS, HTTP/2 is offered in the handshake either way.
	HTTP2Cleartext bool
	// Budget, when non-nil, traces every request for the latency budget (bench/budget):
	// when it began, was decoded, was forwarded and was answered. nil (the default) traces
	// nothing and costs a nil check in the lock handlers.
	Budget *budget.Recorder
}

// Server serves the HTTP API for one node.
type Server struct {
	cfg  Config
	svc  Services
	auth *guard
	gate leaseGate // refuses missing and foreign leases alike, on the leader (leasegate.go)
	log  hclog.Logger
	http *http.Server
	mux  *http.ServeMux
	// places are the routes' places by ServeMux pattern, for what runs before the mux
	// (forwardUnknownTokens) and must know whether serve will forward a request itself.
	places map[string]place
	fwd    *http.Client
	met    *metrics
	held   *limiter
	// heldByID and streamsByID are the per-caller caps (Config.MaxHeldPerIdentity,
	// Config.MaxStreamsPerIdentity).
	heldByID    *perIdentity
	streamsByID *perIdentity
	// life guards the registration loop's start and stop: Serve and Shutdown run on
	// different goroutines (a test stops a node while its Serve is starting).
	life    sync.Mutex
	cancel  context.CancelFunc // set by Serve; nil until then
	stopped bool               // Shutdown ran: a later Serve starts no loop
	done    chan struct{}
}

// scheme is the URL scheme other nodes' APIs speak.
func (s *Server) scheme() string {
	if s.cfg.TLS != nil {
		return "https://"
	}
	return "http://"
}

// NewServer builds a server; call Serve or ListenAndServe to start it.
func NewServer(cfg Config) (*Server, error) {
	if missing := cfg.Services.missing(); len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s (every role is required; NodeServices sets them all)", ErrMissingRole, strings.Join(missing, ", "))
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
	if cfg.MaxHeldPerIdentity == 0 {
		cfg.MaxHeldPerIdentity = max(cfg.MaxHeldRequests/10, 1)
	}
	if cfg.MaxStreamsPerIdentity == 0 {
		cfg.MaxStreamsPerIdentity = 32
	}
	if cfg.HoldTimeout == 0 {
		cfg.HoldTimeout = DefaultHoldTimeout
	}
	if cfg.RegisterInterval == 0 {
		cfg.RegisterInterval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.Default()
	}
	s := &Server{cfg: cfg, svc: cfg.Services, auth: &guard{ids: cfg.Services.Identities, on: cfg.ACL}, gate: leaseGate{leases: cfg.Services.Leases, acl: cfg.ACL}, log: cfg.Logger.Named("http"), mux: http.NewServeMux(), done: make(chan struct{}), held: newLimiter(cfg.MaxHeldRequests),
		heldByID: newPerIdentity(cfg.MaxHeldPerIdentity), streamsByID: newPerIdentity(cfg.MaxStreamsPerIdentity)}
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
	s.met = newMetrics(cfg.Services.Status)
	s.met.reg.MustRegister(usageCollector{usage: cfg.Services.Usage}) // with the usage counts: admin only
	s.routes()
	browser := &BrowserPolicy{AllowedHosts: cfg.AllowedHosts, AllowedOrigins: cfg.AllowedOrigins, Names: s.ownNames, RequireJSON: true}
	handler := s.met.instrument(s.recoverer(browser.Wrap(s.onlyNodesSpeakForNodes(s.checkNames(s.forwardUnknownTokens(s.mux))))))
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
	if cfg.HTTP2Cleartext {
		p := new(http.Protocols)
		p.SetHTTP1(true)
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
		s.http.Protocols = p
	}
	return s, nil
}

// Handler returns the server's HTTP handler, for tests that serve it themselves.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Serve serves on l and runs the follower registration loop until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	s.life.Lock()
	if !s.stopped && s.cancel == nil {
		ctx, cancel := context.WithCancel(context.Background())
		s.cancel = cancel
		go func() {
			defer close(s.done)
			s.registerLoop(ctx)
		}()
	}
	s.life.Unlock()
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
	s.life.Lock()
	s.stopped = true
	cancel := s.cancel
	s.life.Unlock()
	if cancel != nil {
		cancel()
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

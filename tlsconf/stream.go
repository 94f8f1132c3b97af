package tlsconf

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Handshake deadlines of the stream layer.
const (
	// AcceptHandshakeTimeout bounds the handshake of an accepted connection,
	// so a peer that connects and never speaks holds a goroutine and a file
	// descriptor for at most this long.
	AcceptHandshakeTimeout = 10 * time.Second
	// DefaultDialTimeout bounds Dial (connect and handshake) when raft passes
	// no timeout.
	DefaultDialTimeout = 10 * time.Second
)

// Bounds of the accepting side, so that connections which never finish their handshake
// (a port scan, a flood of silent connections) cost a bounded number of goroutines and
// file descriptors and a bounded number of log lines, and leave room for real peers.
const (
	// MaxPendingHandshakes bounds the accepted connections whose TLS handshake has not
	// ended yet (each lasts at most AcceptHandshakeTimeout). A connection accepted over
	// the bound is closed at once, before any TLS; raft's dialer retries.
	MaxPendingHandshakes = 256
	// MaxPendingHandshakesPerIP bounds them per remote IP address, so that one host's
	// silent connections cannot take every slot from the peers: a real peer elsewhere
	// still connects at once. It is well above what a peer's own concurrent dials need.
	MaxPendingHandshakesPerIP = 32

	// refusalLogBurst lines about refused or dropped peers are logged per
	// refusalLogInterval at most; the next line logged says how many were left out
	// (Stats, and the node's raftlock_raft_peers_refused_total, count them all), so a
	// flood writes one line every 2 s.
	refusalLogBurst    = 5
	refusalLogInterval = 10 * time.Second
)

// StreamLayer carries hashicorp/raft's NetworkTransport over mutual TLS. Both
// directions use the Reloader's peer configs: only nodes of the cluster CA
// may connect or be connected to, and a certificate Reload applies to the
// next connection. Pass it to raft.NewNetworkTransportWithLogger.
type StreamLayer struct {
	ln        net.Listener
	advertise net.Addr
	server    *tls.Config
	client    *tls.Config
	logger    hclog.Logger

	handshakeTimeout time.Duration // AcceptHandshakeTimeout; shorter in tests
	admit            atomic.Pointer[func(nodeID string) bool]

	slots   handshakeSlots // MaxPendingHandshakes(PerIP); smaller in tests
	logs    logLimiter
	refused atomic.Uint64
	dropped atomic.Uint64
}

// StreamStats counts what the accepting side of a StreamLayer turned away, for
// metrics and tests.
type StreamStats struct {
	// PendingHandshakes is the number of accepted connections whose handshake has
	// not ended yet.
	PendingHandshakes int
	// Refused counts accepted connections whose handshake failed or timed out, or
	// whose node is not a member.
	Refused uint64
	// Dropped counts connections closed at once because too many handshakes were
	// pending (in all, or from their IP address).
	Dropped uint64
}

// Stats returns the layer's counts so far.
func (s *StreamLayer) Stats() StreamStats {
	return StreamStats{PendingHandshakes: s.slots.pending(), Refused: s.refused.Load(), Dropped: s.dropped.Load()}
}

// SetAdmit makes the layer accept a peer only when admit is true for the node ID its
// certificate names: the node's membership, so that a removed node's certificate, valid
// for its whole lifetime, opens no consensus connection. nil (the default) admits every
// node of the cluster CA. It may be called while the layer serves.
func (s *StreamLayer) SetAdmit(admit func(nodeID string) bool) {
	if admit == nil {
		s.admit.Store(nil)
		return
	}
	s.admit.Store(&admit)
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// NewStreamLayer listens on bind (host:port) for Raft peers. advertise is
// the address peers dial and Addr reports; nil means the bound address,
// which is refused when it is unspecified (0.0.0.0 or [::]) because peers
// could not dial it.
func NewStreamLayer(bind string, advertise net.Addr, r *Reloader) (*StreamLayer, error) {
	if r == nil {
		return nil, ErrNoTLS
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("tlsconf: listen for raft on %s: %w", bind, err)
	}
	if advertise == nil {
		if ta, ok := ln.Addr().(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
			_ = ln.Close()
			return nil, fmt.Errorf("tlsconf: raft bind address %s is not one peers can dial; give an advertise address", bind)
		}
	}
	return &StreamLayer{
		ln:        ln,
		advertise: advertise,
		server:    r.PeerServerConfig(),
		client:    r.PeerClientConfig(),
		logger:    r.logger.Named("raft-stream"),

		handshakeTimeout: AcceptHandshakeTimeout,
		slots:            handshakeSlots{max: MaxPendingHandshakes, perIPMax: MaxPendingHandshakesPerIP},
	}, nil
}

// Accept waits for the next peer connection. It returns before the TLS
// handshake, which runs on the connection's first Read or Write under
// AcceptHandshakeTimeout, so one slow or hostile peer never holds up Accept
// for the others. A connection over MaxPendingHandshakes (or
// MaxPendingHandshakesPerIP) is closed at once and Accept waits for the next
// one. A peer that fails the handshake has its connection closed; the failed
// Read or Write returns the reason. Refusals are logged at Warn, at most
// refusalLogBurst lines per refusalLogInterval, and all counted in Stats.
func (s *StreamLayer) Accept() (net.Conn, error) {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c)
		if reason := s.slots.acquire(ip); reason != "" {
			s.dropped.Add(1)
			s.warn("dropped raft connection before its TLS handshake", "remote", c.RemoteAddr().String(), "reason", reason)
			_ = c.Close()
			continue
		}
		return &serverConn{Conn: tls.Server(c, s.server), s: s, ip: ip, admit: s.admit.Load()}, nil
	}
}

// warn logs a refusal unless refusalLogBurst lines were logged in this
// refusalLogInterval already.
func (s *StreamLayer) warn(msg string, args ...any) {
	ok, left := s.logs.allow(time.Now())
	if !ok {
		return
	}
	if left > 0 {
		args = append(args, "suppressed", left)
	}
	s.logger.Warn(msg, args...)
}

// Close stops listening. Connections already accepted stay open; raft's
// transport closes them.
func (s *StreamLayer) Close() error {
	return s.ln.Close()
}

// Addr returns the advertise address if one was given, else the bound one.
// Raft gives it to peers as this node's address.
func (s *StreamLayer) Addr() net.Addr {
	if s.advertise != nil {
		return s.advertise
	}
	return s.ln.Addr()
}

// Dial connects to a peer and completes the TLS handshake within timeout
// (DefaultDialTimeout if zero), verifying that the peer is a node of the
// cluster CA. A refused peer is logged at Warn.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: s.client}
	c, err := d.DialContext(ctx, "tcp", string(address))
	if err != nil {
		// A peer that is down is routine (raft retries and logs it); a peer
		// that fails the handshake is worth an operator's attention.
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			s.logger.Debug("cannot connect to raft peer", "address", string(address), "error", err)
		} else {
			s.logger.Warn("refused raft peer", "address", string(address), "error", err)
		}
		return nil, err
	}
	return c, nil
}

// serverConn runs the server handshake once, lazily, with a deadline.
// crypto/tls would handshake lazily too, but without a deadline and without
// telling anyone who was refused. It holds a handshake slot until the
// handshake ends or the connection is closed, whichever comes first.
type serverConn struct {
	*tls.Conn
	s       *StreamLayer
	ip      string
	admit   *func(nodeID string) bool // nil: every node of the CA
	once    sync.Once
	err     error
	release sync.Once
}

func (c *serverConn) handshake() error {
	c.once.Do(func() {
		defer c.releaseSlot()
		ctx, cancel := context.WithTimeout(context.Background(), c.s.handshakeTimeout)
		defer cancel()
		if err := c.Conn.HandshakeContext(ctx); err != nil {
			c.err = err
			c.s.refused.Add(1)
			c.s.warn("refused raft peer", "remote", c.RemoteAddr().String(), "error", err)
			_ = c.Conn.Close()
			return
		}
		if c.admit == nil {
			return
		}
		// The peer config verified a node certificate of the CA, so it names a node.
		id, _ := NodeIDFromCert(c.Conn.ConnectionState().PeerCertificates[0])
		if !(*c.admit)(id) {
			c.err = fmt.Errorf("%w: %q", ErrNotMember, id)
			c.s.refused.Add(1)
			c.s.warn("refused raft peer", "remote", c.RemoteAddr().String(), "node", id, "error", c.err)
			_ = c.Conn.Close()
		}
	})
	return c.err
}

func (c *serverConn) releaseSlot() {
	c.release.Do(func() { c.s.slots.free(c.ip) })
}

// Close frees the connection's handshake slot if its handshake never ran.
func (c *serverConn) Close() error {
	c.releaseSlot()
	return c.Conn.Close()
}

// Read completes the handshake first; see Accept.
func (c *serverConn) Read(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

// Write completes the handshake first; see Accept.
func (c *serverConn) Write(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

// remoteIP is the IP address a connection comes from, the key of the per-IP bound.
func remoteIP(c net.Conn) string {
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// handshakeSlots counts pending handshakes, in all and per remote IP.
type handshakeSlots struct {
	max, perIPMax int

	mu    sync.Mutex
	total int
	perIP map[string]int
}

// acquire takes a slot for a connection from ip, or says why there is none.
func (h *handshakeSlots) acquire(ip string) (refusal string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.total >= h.max:
		return fmt.Sprintf("%d TLS handshakes are pending, the most this node allows", h.total)
	case h.perIP[ip] >= h.perIPMax:
		return fmt.Sprintf("%d TLS handshakes from %s are pending, the most this node allows per address", h.perIP[ip], ip)
	}
	if h.perIP == nil {
		h.perIP = make(map[string]int)
	}
	h.total++
	h.perIP[ip]++
	return ""
}

// free gives back a slot acquire took for ip.
func (h *handshakeSlots) free(ip string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total--
	if h.perIP[ip]--; h.perIP[ip] <= 0 {
		delete(h.perIP, ip)
	}
}

func (h *handshakeSlots) pending() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.total
}

// logLimiter lets refusalLogBurst lines through per refusalLogInterval window.
type logLimiter struct {
	mu         sync.Mutex
	start      time.Time
	n          int
	suppressed uint64
}

// allow reports whether a line may be logged at now and, if so, how many lines were
// left out since the last one logged.
func (l *logLimiter) allow(now time.Time) (ok bool, suppressed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) >= refusalLogInterval || now.Before(l.start) {
		l.start, l.n = now, 0
	}
	if l.n >= refusalLogBurst {
		l.suppressed++
		return false, 0
	}
	l.n++
	suppressed, l.suppressed = l.suppressed, 0
	return true, suppressed
}

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
	}, nil
}

// Accept waits for the next peer connection. It returns before the TLS
// handshake, which runs on the connection's first Read or Write under
// AcceptHandshakeTimeout, so one slow or hostile peer never holds up Accept
// for the others. A peer that fails the handshake is logged at Warn and its
// connection is closed; the failed Read or Write returns the reason.
func (s *StreamLayer) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	return &serverConn{Conn: tls.Server(c, s.server), logger: s.logger, timeout: s.handshakeTimeout, admit: s.admit.Load()}, nil
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
// telling anyone who was refused.
type serverConn struct {
	*tls.Conn
	logger  hclog.Logger
	timeout time.Duration
	admit   *func(nodeID string) bool // nil: every node of the CA
	once    sync.Once
	err     error
}

func (c *serverConn) handshake() error {
	c.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		if err := c.Conn.HandshakeContext(ctx); err != nil {
			c.err = err
			c.logger.Warn("refused raft peer", "remote", c.RemoteAddr().String(), "error", err)
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
			c.logger.Warn("refused raft peer", "remote", c.RemoteAddr().String(), "node", id, "error", c.err)
			_ = c.Conn.Close()
		}
	})
	return c.err
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

package netns_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// raftRPCTimeout bounds each Raft RPC the attacker sends; a refused one fails at once.
const raftRPCTimeout = 3 * time.Second

// tlsStream is an attacker's raft.StreamLayer: it dials with any certificate it likes and
// does not care who answers (InsecureSkipVerify), so whatever refuses the connection is
// the node, never the attacker's own checks. It listens on loopback only because
// NetworkTransport insists on accepting too.
type tlsStream struct {
	ln  net.Listener
	cfg *tls.Config
}

var _ raft.StreamLayer = (*tlsStream)(nil)

func newTLSStream(cert tls.Certificate) (*tlsStream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return &tlsStream{ln: ln, cfg: &tls.Config{
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, // the attacker trusts anyone; the node must not
		MinVersion:         tls.VersionTLS12,
	}}, nil
}

func (s *tlsStream) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *tlsStream) Close() error              { return s.ln.Close() }
func (s *tlsStream) Addr() net.Addr            { return s.ln.Addr() }

// Dial connects and completes the handshake. With TLS 1.3 the client finishes before the
// server has checked the client's certificate, so a refusal may only show on the RPC.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: s.cfg}
	return d.DialContext(ctx, "tcp", string(address))
}

// newAttackTransport returns a hashicorp/raft NetworkTransport: plaintext TCP when cert is
// nil (raft.NewTCPTransport, as an unconfigured raft node would dial), otherwise TLS
// presenting cert.
func newAttackTransport(cert *tls.Certificate) (*raft.NetworkTransport, error) {
	if cert == nil {
		return raft.NewTCPTransport("127.0.0.1:0", nil, 1, raftRPCTimeout, io.Discard)
	}
	s, err := newTLSStream(*cert)
	if err != nil {
		return nil, err
	}
	return raft.NewNetworkTransport(s, 1, raftRPCTimeout, io.Discard), nil
}

// attackHeader is the RPC header of a server that is no member ("mallory").
func attackHeader(tr *raft.NetworkTransport) raft.RPCHeader {
	return raft.RPCHeader{
		ProtocolVersion: raft.ProtocolVersionMax,
		ID:              []byte("mallory"),
		Addr:            tr.EncodePeer("mallory", tr.LocalAddr()),
	}
}

// sendAppendEntries claims leadership of a far higher term and appends an entry. A node
// that accepted it would adopt the term (and drop its leader).
func sendAppendEntries(tr *raft.NetworkTransport, id, target string, term uint64) error {
	req := &raft.AppendEntriesRequest{
		RPCHeader:         attackHeader(tr),
		Term:              term + 1000,
		PrevLogEntry:      0,
		PrevLogTerm:       0,
		Entries:           []*raft.Log{{Index: 1 << 40, Term: term + 1000, Type: raft.LogCommand, Data: []byte("mallory was here")}},
		LeaderCommitIndex: 1 << 40,
	}
	var resp raft.AppendEntriesResponse
	return tr.AppendEntries(raft.ServerID(id), raft.ServerAddress(target), req, &resp)
}

// sendTimeoutNow tells the node to start an election at once, as a leader does when it
// hands leadership over. A node that accepted it would raise the term.
func sendTimeoutNow(tr *raft.NetworkTransport, id, target string) error {
	req := &raft.TimeoutNowRequest{RPCHeader: attackHeader(tr)}
	var resp raft.TimeoutNowResponse
	return tr.TimeoutNow(raft.ServerID(id), raft.ServerAddress(target), req, &resp)
}

// rawBytes writes something shaped like a Raft RPC in plaintext (the AppendEntries type
// byte, then a msgpack map) and reads whatever comes back until the node closes the
// connection. The node refused if it closed the connection (EOF or reset, not a timeout)
// without an answer: nothing, or at most a TLS alert record (type 21).
func rawBytes(addr string) (refused bool, detail string) {
	c, err := dialTCP(addr)
	if err != nil {
		return false, "dial: " + err.Error() // the port must be open for the case to mean anything
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("\x00\x81\xa4Term\xcf\x00\x00\x00\x00\x00\x00\x10\x00\r\n\r\n")); err != nil {
		return true, "write refused: " + err.Error()
	}
	got, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return false, "the connection stayed open for 5 s"
	}
	if len(got) > 0 && got[0] != 21 {
		return false, "answered " + strings.TrimSpace(string(got))
	}
	return true, "closed after " + strconv.Itoa(len(got)) + " bytes"
}

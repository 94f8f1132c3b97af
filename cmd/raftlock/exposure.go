package main

import (
	"net"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/tlsconf"
)

// exposure is what serve knows at start about who can reach this node and what guards it.
type exposure struct {
	httpListen, raftListen string // --http-addr, --raft-addr
	tls                    bool   // --tls-cert, --tls-key and --tls-ca are set
	clientAuth             string // --tls-client-auth
	acl                    bool   // --acl
}

// warnExposed logs, once at start and at WARN, each way in which this node is open to
// anyone who reaches a port it listens on beyond loopback, and what to do about it. Both
// security switches are off by default so that `make run` works on loopback; a node
// started with the same defaults on 0.0.0.0 or a LAN address lets every machine that
// reaches it take any lock, add voters and append entries to the Raft log, and said
// nothing. Listening on loopback only, or with TLS (client certificates
// required, or ACLs) and ACLs, logs nothing.
func warnExposed(logger hclog.Logger, e exposure) {
	var beyond []any
	if beyondLoopback(e.httpListen) {
		beyond = append(beyond, "http_addr", e.httpListen)
	}
	if beyondLoopback(e.raftListen) {
		beyond = append(beyond, "raft_addr", e.raftListen)
	}
	if len(beyond) == 0 {
		return
	}
	switch {
	case !e.tls && !e.acl:
		logger.Warn("this node listens beyond loopback with neither TLS nor ACLs: anyone who reaches these ports can take and release any lock, add or remove voters and append entries to the Raft log; add --tls-cert/--tls-key/--tls-ca (with --tls-client-auth require) and --acl, or listen on loopback (127.0.0.1) only; docs/SECURITY.md shows the steps", beyond...)
	case !e.tls:
		logger.Warn("this node listens beyond loopback with ACLs but without TLS: tokens cross the network in clear, and ACLs guard the HTTP API only, so anyone who reaches the Raft port can append entries, force elections and replace the state; add --tls-cert/--tls-key/--tls-ca, or listen on loopback (127.0.0.1) only", beyond...)
	case !e.acl && e.clientAuth != tlsconf.ClientAuthRequire:
		if beyondLoopback(e.httpListen) {
			logger.Warn("this node's HTTP API listens beyond loopback with TLS but neither client certificates nor ACLs: anyone who reaches it can take and release any lock and add or remove voters; add --acl, or --tls-client-auth require, or listen on loopback (127.0.0.1) only", "http_addr", e.httpListen)
		}
	}
}

// beyondLoopback reports whether a listen address (host:port) can be reached from other
// machines: any host but a loopback IP or localhost, including the unspecified addresses
// (0.0.0.0, [::]) and an empty host. A name other than localhost counts as reachable (it is
// not resolved here: whatever it resolves to later is what others reach).
func beyondLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

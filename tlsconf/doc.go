// Package tlsconf holds raftlock's TLS building blocks: a small certificate
// authority for clusters that have no PKI team, loading and hot reloading of the
// certificate files a node is given, the tls.Configs for the HTTPS API, for
// node-to-node traffic and for clients, and a raft.StreamLayer that carries
// Raft over mutual TLS.
//
// Trust model. A cluster has its own CA. Every node holds a certificate from it
// whose URI SAN is raftlock://node/<id>; every client that authenticates holds
// one whose URI SAN is raftlock://client/<name>. The node-to-node port (Raft and
// leader forwarding) is always mutual and accepts only node certificates, so a
// client certificate from the same CA cannot take part in consensus. The HTTPS
// API verifies client certificates as --tls-client-auth asks (none: not needed, but verified
// when offered, so nodes can identify themselves; or require). Every port speaks TLS 1.3
// at least.
//
// The stream layer bounds the handshakes it has pending (in all and per remote address),
// closing connections over the bound at once, and rate-limits its refusal log lines, so a
// flood of silent connections costs bounded resources and leaves room for real peers.
//
// Reload. A Reloader reads the certificate, key and CA files once and again on
// every Reload (callers call it on SIGHUP). The configs it hands out look up the
// current files on every handshake, so a rotation takes effect for new
// connections without a restart; connections already open keep the identity
// they were made with. A failed reload keeps the previous files in use, and so does one
// whose certificate names another node ID than the one the node started with.
//
// Key material never appears in log lines or error texts: errors name the file
// and say what is wrong with it, never what is in it.
//
// The package imports nothing of raftlock, only the standard library,
// hashicorp/raft and go-hclog, so that every layer (node, HTTP server, CLI, Go
// client) can use it without import cycles.
package tlsconf

// Package transport serves raftlock's HTTP JSON API (v1) for one node.
//
// Any node answers any request. A write, or a linearizable read, that reaches a follower
// is forwarded to the leader's HTTP address (registered in the state machine) with a hop
// limit, before the follower decodes it or does any cluster work for it: where a request
// is served is decided first, from its method, route and query (place.go). The leader's
// answer is relayed as it came, with X-Raftlock-Leader added; the follower reads it only
// to hold a request the leader could not serve for want of a leader either, and to keep a
// repeat's denial of its own first attempt (hold.go). While no leader is known the request
// is held, then answered 503 no_leader with Retry-After, never a 500 or a hang.
//
// Decoding is strict: unknown fields, trailing data, wrong types, out-of-range values and
// bodies over 64 KiB get the documented 4xx codes. Every error is
// {"error": {"code", "message"}}.
//
// # The package's parts
//
// The path of one request, in the order it runs:
//
//	server.go     Config, Server, NewServer, Serve, Shutdown; the middleware chain
//	              (metrics.go instrument, recoverer, authorize.go forwardUnknownTokens,
//	              budget.go traced) and the 404/405 answer for unknown routes
//	routes.go     the route table: every pattern, its place and its endpoint (the OpenAPI
//	              check reads it)
//	place.go      where a route's requests are served: a request that needs the leader
//	              and reaches a follower that knows it is forwarded before its endpoint runs
//	endpoint.go   the one reply path: serve routes the request first; an endpoint decodes
//	              one served here into a call; serve authorizes it, holds it (held.go,
//	              hold.go), makes it, forwards it to the leader (forward.go) when it was
//	              routed there or the node answers cluster.ErrNotLeader (leadership moved
//	              in flight), and writes the answer or the error
//	errors.go     the one table that maps every error to status, code, message and
//	              Retry-After (errorFor), and writeError / writeJSON
//
// The endpoints, one file per area of the API, each a small type holding only the roles
// it uses:
//
//	leases.go      /v1/leases (create, keepalive, lookup, revoke; the body forms)
//	locks.go       /v1/locks (acquire, release, status, list), and the release and status
//	               decoding every primitive shares
//	primitives.go  /v1/semaphores and /v1/elections
//	members.go     /v1/cluster (status, members, versions, leader transfer), /healthz, /readyz
//	acl.go         /v1/acl (bootstrap, policies, tokens)
//	events.go      /v1/history and the /v1/events stream
//	overview.go    /v1/overview, the dashboard's data
//	backup.go      /v1/backup (and /v1/snapshot, its older name): a backup file
//	openapi.go     /v1/openapi.json (openapi.json, checked by openapi_test.go)
//	ui.go          /ui/, the embedded dashboard
//	metrics.go     /metrics: the HTTP counters and the node's metrics by name
//
// What the endpoints stand on:
//
//	roles.go                  the role interfaces the server needs of a node
//	                          (LeaseService, LockService, ...) and Services, one field per role
//	services.go               NodeServices: the roles of a *cluster.Node, and ms/fromMs
//	authorize.go              ACL checks (guard), node certificates, tokens unknown here
//	leasegate.go              the lease gate: a lease that is missing or another
//	                          identity's is refused on the leader, before any proposal
//	decode.go                 strict body and query decoding; holderFields, the
//	                          cluster.Holder of every request that can queue
//	register.go               the follower's registration loop (the Registrar role), and Join
//	budget.go                 the latency budget's trace hooks (Config.Budget)
//
// A new route is a pattern in routes.go and an endpoint in its area's file; an error it
// can answer that is not an *api.Error gets a line in errorFor's table (answers).
package transport

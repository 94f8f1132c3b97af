package transport

import "net/http"

// route is one API route: a ServeMux pattern and its handler, which serve makes of its
// place and endpoint (both zero for /metrics, which has its own handler).
type route struct {
	pattern string
	handler http.HandlerFunc
	place   place
	ep      endpoint
}

// at is the route of pattern, served by serve at p with ep.
func (s *Server) at(pattern string, p place, ep endpoint) route {
	return route{pattern: pattern, handler: s.serve(p, ep), place: p, ep: ep}
}

// apiRoutes lists every route the server registers, in one place, so that the OpenAPI
// document can be checked against it (Routes). Each route's endpoint lives with its area
// (leases.go, locks.go, ...); its place says which node serves it (place.go: here, or the
// leader, to which a follower forwards it before the endpoint runs); serve gives them all
// the same reply path.
func (s *Server) apiRoutes() []route {
	svc := s.svc
	leases := leaseRoutes{svc.Leases, s.auth, s.gate}
	locks := lockRoutes{svc.Locks, s.auth}
	semaphores := semaphoreRoutes{svc.Semaphores}
	elections := electionRoutes{svc.Elections}
	members := memberRoutes{svc.Members, svc.Status, svc.Routing, s.auth, s.cfg.TLS != nil}
	acl := aclRoutes{svc.ACL, s.auth, s.log}
	usage := usageRoutes{svc.Usage, s.auth}
	events := eventRoutes{svc.Events, s.auth, s.done, s.streamSlot}
	overview := overviewRoutes{svc.Events, svc.Status, svc.Routing, s.auth, s.fwd, s.scheme()}
	backups := backupRoutes{svc.Backups, s.log}
	return []route{
		s.at("POST /v1/leases", atLeader, leases.create),
		s.at("POST /v1/leases/{id}/keepalive", atLeaderOnce, leases.keepAlive),
		s.at("POST /v1/leases/keepalive", keepAlives, leases.keepAliveBody),
		s.at("POST /v1/leases/lookup", atLeaderRead, leases.lookupBody),
		s.at("POST /v1/leases/revoke", atLeaderOnce, leases.revokeBody),
		s.at("GET /v1/leases/{id}", atLeaderRead, leases.get),
		s.at("DELETE /v1/leases/{id}", atLeaderOnce, leases.revoke),
		s.at("PUT /v1/locks/{name...}", traced(atLeaderHolder), locks.acquire),
		s.at("DELETE /v1/locks/{name...}", traced(atLeaderOnce), locks.release),
		s.at("GET /v1/locks/{name...}", atLeaderRead, locks.status),
		s.at("GET /v1/locks", atLeaderRead, locks.list),
		s.at("POST /v1/locksets", traced(atLeaderHolder), lockSetRoutes{svc.LockSets}.acquire),
		s.at("DELETE /v1/locksets", atLeaderOnce, lockSetRoutes{svc.LockSets}.release),
		s.at("PUT /v1/semaphores/{name...}", atLeaderHolder, semaphores.acquire),
		s.at("DELETE /v1/semaphores/{name...}", atLeaderOnce, semaphores.release),
		s.at("GET /v1/semaphores/{name...}", atLeaderRead, semaphores.status),
		s.at("PUT /v1/elections/{name...}", atLeaderHolder, elections.campaign),
		s.at("DELETE /v1/elections/{name...}", atLeaderOnce, elections.resign),
		s.at("GET /v1/elections/{name...}", atLeaderRead, elections.status),
		s.at("GET /v1/cluster", here, members.cluster),
		s.at("POST /v1/cluster/nodes", here, members.add),
		s.at("DELETE /v1/cluster/nodes/{id}", here, members.remove),
		s.at("PUT /v1/cluster/nodes/{id}/version", here, members.version),
		s.at("POST /v1/cluster/transfer-leader", here, members.transferLeader),
		s.at("GET /v1/backup", here, backups.backup),
		s.at("GET /v1/snapshot", here, backups.backup), // the older name of /v1/backup
		s.at("POST /v1/acl/bootstrap", here, acl.bootstrap),
		s.at("PUT /v1/acl/policies/{name}", here, acl.setPolicy),
		s.at("GET /v1/acl/policies", here, acl.listPolicies),
		s.at("GET /v1/acl/policies/{name}", here, acl.getPolicy),
		s.at("DELETE /v1/acl/policies/{name}", here, acl.deletePolicy),
		s.at("POST /v1/acl/tokens", here, acl.createToken),
		s.at("GET /v1/acl/tokens", here, acl.listTokens),
		s.at("DELETE /v1/acl/tokens/{accessor}", here, acl.deleteToken),
		s.at("PUT /v1/acl/tokens/{accessor}", here, acl.updateToken),
		s.at("GET /v1/usage", here, usage.usage),
		s.at("GET /v1/acl/token/self", here, acl.tokenSelf),
		s.at("GET /healthz", here, members.healthz),
		s.at("GET /readyz", here, members.readyz),
		{pattern: "GET /metrics", handler: s.met.handler(s.auth)},
		s.at("GET /v1/openapi.json", here, openAPIDoc),
		s.at("GET /v1/history/{name...}", atLeaderRead, events.history),
		s.at("GET /v1/events", here, events.stream),
		s.at("GET /v1/overview", here, overview.overview),
		s.at("GET /ui/", here, uiFile),
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
	s.places = make(map[string]place)
	for _, r := range s.apiRoutes() {
		s.mux.HandleFunc(r.pattern, r.handler)
		s.places[r.pattern] = r.place
	}
	// The node's root is the dashboard's door, not an API route (it is not in the OpenAPI
	// document): an operator who types the node's address lands on /ui/.
	s.mux.HandleFunc("GET /{$}", redirectToUI)
	s.mux.HandleFunc("/", s.handleUnknown)
}

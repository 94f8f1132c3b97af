package transport

import "net/http"

// route is one API route: a ServeMux pattern and its handler.
type route struct {
	pattern string
	handler http.HandlerFunc
}

// apiRoutes lists every route the server registers, in one place, so that the OpenAPI
// document can be checked against it (Routes). Each route's endpoint lives with its area
// (leases.go, locks.go, ...); serve gives them all the same reply path.
func (s *Server) apiRoutes() []route {
	svc := s.svc
	leases := leaseRoutes{svc.Leases, s.auth, s.gate}
	locks := lockRoutes{svc.Locks, s.auth}
	semaphores := semaphoreRoutes{svc.Semaphores}
	elections := electionRoutes{svc.Elections}
	members := memberRoutes{svc.Members, svc.Status, svc.Routing, s.auth, s.cfg.TLS != nil}
	acl := aclRoutes{svc.ACL, s.auth, s.log}
	events := eventRoutes{svc.Events, s.auth, s.done, s.streamSlot}
	overview := overviewRoutes{svc.Events, svc.Status, svc.Routing, s.auth, s.fwd, s.scheme()}
	backups := backupRoutes{svc.Backups, s.log}
	return []route{
		{"POST /v1/leases", s.serve(leases.create)},
		{"POST /v1/leases/{id}/keepalive", s.serve(leases.keepAlive)},
		{"POST /v1/leases/keepalive", s.serve(leases.keepAliveBody)},
		{"POST /v1/leases/lookup", s.serve(leases.lookupBody)},
		{"POST /v1/leases/revoke", s.serve(leases.revokeBody)},
		{"GET /v1/leases/{id}", s.serve(leases.get)},
		{"DELETE /v1/leases/{id}", s.serve(leases.revoke)},
		{"PUT /v1/locks/{name...}", s.serve(locks.acquire)},
		{"DELETE /v1/locks/{name...}", s.serve(locks.release)},
		{"GET /v1/locks/{name...}", s.serve(locks.status)},
		{"GET /v1/locks", s.serve(locks.list)},
		{"POST /v1/locksets", s.serve(lockSetRoutes{svc.LockSets}.acquire)},
		{"DELETE /v1/locksets", s.serve(lockSetRoutes{svc.LockSets}.release)},
		{"PUT /v1/semaphores/{name...}", s.serve(semaphores.acquire)},
		{"DELETE /v1/semaphores/{name...}", s.serve(semaphores.release)},
		{"GET /v1/semaphores/{name...}", s.serve(semaphores.status)},
		{"PUT /v1/elections/{name...}", s.serve(elections.campaign)},
		{"DELETE /v1/elections/{name...}", s.serve(elections.resign)},
		{"GET /v1/elections/{name...}", s.serve(elections.status)},
		{"GET /v1/cluster", s.serve(members.cluster)},
		{"POST /v1/cluster/nodes", s.serve(members.add)},
		{"DELETE /v1/cluster/nodes/{id}", s.serve(members.remove)},
		{"PUT /v1/cluster/nodes/{id}/version", s.serve(members.version)},
		{"POST /v1/cluster/transfer-leader", s.serve(members.transferLeader)},
		{"GET /v1/backup", s.serve(backups.backup)},
		{"GET /v1/snapshot", s.serve(backups.backup)}, // the older name of /v1/backup
		{"POST /v1/acl/bootstrap", s.serve(acl.bootstrap)},
		{"PUT /v1/acl/policies/{name}", s.serve(acl.setPolicy)},
		{"GET /v1/acl/policies", s.serve(acl.listPolicies)},
		{"GET /v1/acl/policies/{name}", s.serve(acl.getPolicy)},
		{"DELETE /v1/acl/policies/{name}", s.serve(acl.deletePolicy)},
		{"POST /v1/acl/tokens", s.serve(acl.createToken)},
		{"GET /v1/acl/tokens", s.serve(acl.listTokens)},
		{"DELETE /v1/acl/tokens/{accessor}", s.serve(acl.deleteToken)},
		{"PUT /v1/acl/tokens/{accessor}", s.serve(acl.updateToken)},
		{"GET /v1/usage", s.serve(acl.usage)},
		{"GET /v1/acl/token/self", s.serve(acl.tokenSelf)},
		{"GET /healthz", s.serve(members.healthz)},
		{"GET /readyz", s.serve(members.readyz)},
		{"GET /metrics", s.met.handler(s.auth)},
		{"GET /v1/openapi.json", s.serve(openAPIDoc)},
		{"GET /v1/history/{name...}", s.serve(events.history)},
		{"GET /v1/events", s.serve(events.stream)},
		{"GET /v1/overview", s.serve(overview.overview)},
		{"GET /ui/", s.serve(uiFile)},
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
	// The node's root is the dashboard's door, not an API route (it is not in the OpenAPI
	// document): an operator who types the node's address lands on /ui/.
	s.mux.HandleFunc("GET /{$}", redirectToUI)
	s.mux.HandleFunc("/", s.handleUnknown)
}

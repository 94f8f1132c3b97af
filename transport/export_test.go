package transport

import (
	"net/http"
	"time"
)

// SetStreamPing shortens how often an idle event stream pings (and so re-checks its
// token), for tests that wait for a ping; it returns the restore. Call it before any
// server starts and restore after every server stopped.
func SetStreamPing(d time.Duration) (restore func()) {
	old := streamPing
	streamPing = d
	return func() { streamPing = old }
}

// StreamCheck returns the check an event stream opened by r on prefix makes before each
// event and ping (eventRoutes.streamCheck), with ACLs on, for benchmarks.
func StreamCheck(ids Identities, r *http.Request, prefix string) func() error {
	check := eventRoutes{auth: &guard{ids: ids, on: true}}.streamCheck(r, prefix)
	return func() error {
		_, err := check()
		return err
	}
}

// StubRoles is stubRoles, for the tests outside the package.
var StubRoles = stubRoles

// APIRequest is apiRequest, for the tests outside the package.
var APIRequest = apiRequest

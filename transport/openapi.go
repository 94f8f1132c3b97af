package transport

import (
	"context"
	_ "embed"
	"net/http"
)

// openAPIDocument is the OpenAPI 3.1 description of every route in apiRoutes. It is kept
// beside the code that serves those routes, and openapi_test.go fails when a route is
// added or removed without describing it, or when README's examples stop matching it.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3.1 document (JSON) that GET /v1/openapi.json serves. The
// slice is shared: callers must not modify it.
func OpenAPI() []byte { return openAPIDocument }

// openAPIDoc serves the API's OpenAPI document. It needs no leader and no token: the
// document describes the API, it holds nothing secret.
func openAPIDoc(w http.ResponseWriter, r *http.Request) (call, error) {
	return call{do: func(context.Context) (any, error) {
		return rawAnswer(func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "public, max-age=300")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(openAPIDocument) // the client may be gone; nothing useful to do
		}), nil
	}}, nil
}

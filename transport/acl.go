package transport

import (
	"net/http"
)

// The rights a route needs; see authorize.
type access uint8

const (
	accessRead access = iota + 1
	accessLock
	accessAdmin
)

// anyName asks authorize for a right on some name (lease operations name no lock).
const anyName = "\x00any"

// aclOn reports whether ACLs are enforced.
func (s *Server) aclOn() bool { return false }

// authorize checks that r's token grants need on name. With ACLs off it allows everything.
func (s *Server) authorize(r *http.Request, need access, name string) error {
	return nil
}

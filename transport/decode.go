package transport

import (
	"bytes"
	"encoding/json"
	"errors"

	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// readBody reads at most api.MaxBodyBytes of the request body.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	return readBodyLimit(w, r, api.MaxBodyBytes)
}

// readBodyLimit reads at most limit bytes of the request body, for the routes allowed more
// than api.MaxBodyBytes.
func readBodyLimit(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, api.Errorf(api.CodeBodyTooLarge, "request body exceeds %d bytes", limit)
		}
		return nil, api.Errorf(api.CodeInvalidJSON, "reading request body: %v", err)
	}
	return body, nil
}

// decodeStrict decodes one JSON object into v, refusing unknown fields, wrong types and
// trailing data. An empty body is allowed when optional is true and leaves v unchanged.
func decodeStrict(body []byte, v any, optional bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if optional {
			return nil
		}
		return api.Errorf(api.CodeInvalidJSON, "request body is empty; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return api.Errorf(api.CodeInvalidJSON, "field %q must be a %s, not a JSON %s", te.Field, te.Type, te.Value)
		}
		return api.Errorf(api.CodeInvalidJSON, "request body is not a valid JSON object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return api.Errorf(api.CodeInvalidJSON, "request body has data after the JSON object")
	}
	return nil
}

// holderFields are the fields of every request that can wait in a queue (PUT on a lock, a
// lockset, a semaphore, an election): they become its cluster.Holder.
type holderFields struct {
	LeaseID, RequestID, Owner string
	TTLMs, WaitMs             int64
}

// validate checks the fields that do not depend on whether a lease is given: the wait,
// the owner label and the request ID.
func (f holderFields) validate() error {
	if e := api.ValidateWait(f.WaitMs); e != nil {
		return e
	}
	if e := api.ValidateOwner(f.Owner); e != nil {
		return e
	}
	if e := api.ValidateRequestID(f.RequestID); e != nil {
		return e
	}
	return nil
}

// holder is the Holder of validated fields: a lease ID, or none and a TTL (the default
// when not given) with an optional request ID. what names the request ("an acquire", "a
// request") in the message that refuses a request ID beside a lease ID.
func (f holderFields) holder(what string) (cluster.Holder, error) {
	h := cluster.Holder{Wait: fromMs(f.WaitMs), Owner: f.Owner}
	if f.LeaseID != "" {
		if f.TTLMs != 0 {
			return h, api.Errorf(api.CodeInvalidArgument, "ttl_ms applies only when a lease is created; omit it when passing lease_id")
		}
		if f.RequestID != "" {
			return h, api.Errorf(api.CodeInvalidArgument, "request_id applies only when a lease is created; omit it when passing lease_id (%s with a lease is already idempotent)", what)
		}
		lease, err := parseLeaseID(f.LeaseID)
		h.Lease = lease
		return h, err
	}
	ttl, e := api.NormalizeTTL(f.TTLMs)
	if e != nil {
		return h, e
	}
	h.NewLease, h.RequestID, h.TTL = true, f.RequestID, fromMs(ttl)
	return h, nil
}

// parseLeaseID validates and parses a lease ID from a path or body.
func parseLeaseID(s string) (cluster.LeaseID, error) {
	if e := api.ValidateLeaseID(s); e != nil {
		return cluster.LeaseID{}, e
	}
	id, err := cluster.ParseLeaseID(s)
	if err != nil {
		return id, api.Errorf(api.CodeInvalidArgument, "%v", err)
	}
	return id, nil
}

// queryUint parses an optional unsigned integer query parameter.
func queryUint(q url.Values, key string, max uint64) (uint64, error) {
	s := q.Get(key)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > max {
		return 0, api.Errorf(api.CodeInvalidArgument, "query parameter %s=%q must be an integer from 0 to %d", key, s, max)
	}
	return v, nil
}

// queryBool parses a flag given as ?stale, ?stale=true or ?stale=1.
func queryBool(q url.Values, key string) (bool, error) {
	vals, ok := q[key]
	if !ok {
		return false, nil
	}
	switch vals[0] {
	case "", "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, api.Errorf(api.CodeInvalidArgument, "query parameter %s=%q must be true or false", key, vals[0])
}

// knownQuery refuses query parameters the route does not take, so that a typo such as
// ?wait_ms=1000&waitindex=5 is an error rather than a silent non-blocking read.
func knownQuery(q url.Values, allowed ...string) error {
	for k := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return api.Errorf(api.CodeInvalidArgument, "unknown query parameter %q", k)
		}
	}
	return nil
}

// staleQuery reads the query of a route that takes only ?stale.
func staleQuery(r *http.Request) (bool, error) {
	q := r.URL.Query()
	if err := knownQuery(q, "stale"); err != nil {
		return false, err
	}
	return queryBool(q, "stale")
}

// readJSON reads the body of r and decodes it into a T as decodeStrict does (optional: an
// empty body leaves the zero T). The body is returned for the forward to the leader.
func readJSON[T any](w http.ResponseWriter, r *http.Request, optional bool) ([]byte, T, error) {
	var v T
	body, err := readBody(w, r)
	if err == nil {
		err = decodeStrict(body, &v, optional)
	}
	return body, v, err
}

// decodeNamed reads the body of a request on /v1/{kind}/{name...} and decodes it with
// decode, which also checks the name.
func decodeNamed[R any](w http.ResponseWriter, r *http.Request, decode func(name string, body []byte) (R, error)) ([]byte, R, error) {
	body, err := readBody(w, r)
	if err != nil {
		var zero R
		return nil, zero, err
	}
	req, err := decode(r.PathValue("name"), body)
	return body, req, err
}

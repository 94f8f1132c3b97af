package client

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/raftlock/raftlock/api"
)

// Route prefixes of the named resources; the name follows, always last in the path.
const (
	locksRoute      = "/v1/locks/"
	semaphoresRoute = "/v1/semaphores/"
	electionsRoute  = "/v1/elections/"
	historyRoute    = "/v1/history/"
)

// parseEndpoints turns the endpoints given to New into base URLs without a trailing
// slash; blank ones are skipped. A bare "host:port" gets https when tlsOn, http
// otherwise, and with tlsOn an http URL is refused, so that a forgotten scheme cannot
// send a secret in clear text. plain reports whether any endpoint speaks plain HTTP.
func parseEndpoints(endpoints []string, tlsOn bool) (eps []string, plain bool, err error) {
	scheme := "http"
	if tlsOn {
		scheme = "https"
	}
	for _, e := range endpoints {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if !strings.Contains(e, "://") {
			e = scheme + "://" + e
		}
		u, err := url.Parse(e)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, false, fmt.Errorf("client: endpoint %q is not an http(s) URL such as http://127.0.0.1:7001", e)
		}
		if u.Scheme == "http" && tlsOn {
			return nil, false, fmt.Errorf("client: endpoint %q is plain HTTP but TLS is configured: use https://%s", e, u.Host)
		}
		plain = plain || u.Scheme == "http"
		eps = append(eps, strings.TrimRight(e, "/"))
	}
	if len(eps) == 0 {
		return nil, false, errors.New("client: no endpoints given")
	}
	return eps, plain, nil
}

// endpointURL is the URL of path (escaped) with query q on the endpoint at base.
func endpointURL(base, path string, q url.Values) string {
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// namePath is route followed by name, each segment escaped, so that names such as
// "accounts/A" or "a b?c" reach the server unchanged.
func namePath(route, name string) string {
	if !needsEscape(name) {
		return route + name // the common name: one allocation instead of five
	}
	segs := strings.Split(name, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return route + strings.Join(segs, "/")
}

// needsEscape reports whether a segment of name needs escaping in a path: whether it holds
// a byte other than the ones url.PathEscape leaves as they are in a segment (letters,
// digits and "-._~$&+:=@") and the segments' separator "/".
func needsEscape(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~$&+:=@/", c) >= 0:
		default:
			return true
		}
	}
	return false
}

// ms converts a duration to whole milliseconds, rounding up so that a positive duration
// never becomes zero (which means "default" or "do not wait" in the API).
func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// invalid turns ae, the api package's verdict on a value of op's request, into an error
// matching ErrInvalid; nil stays nil. The client checks what the server would refuse, so
// that a request that cannot succeed is not sent, let alone retried.
func invalid(op string, ae *api.Error) error {
	if ae == nil {
		return nil
	}
	return wrap(ErrInvalid, ae, "%s: %s", op, ae.Message)
}

// checkNameAt checks the name of the primitive at route; the message names its kind.
func checkNameAt(op, route, name string) error {
	kind := "lock"
	switch route {
	case semaphoresRoute:
		kind = "semaphore"
	case electionsRoute:
		kind = "election"
	}
	return checkNameOf(op, kind, name)
}

// checkNameOf checks the name of a primitive of kind ("lock", "semaphore", "election").
func checkNameOf(op, kind, name string) error {
	return invalid(op, api.ValidateNameOf(kind, name))
}

func checkWait(op string, wait time.Duration) error {
	if wait < 0 || ms(wait) > api.MaxWaitMs {
		return wrap(ErrInvalid, nil, "%s: wait %v is outside 0 to %v", op, wait, time.Duration(api.MaxWaitMs)*time.Millisecond)
	}
	return nil
}

func checkLeaseID(op, id string) error {
	return invalid(op, api.ValidateLeaseID(id))
}

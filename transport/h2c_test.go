package transport

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestHTTP2Cleartext_OnlyWhenConfigured: a client speaking HTTP/2 without TLS (prior
// knowledge) is answered over HTTP/2 when Config.HTTP2Cleartext is set, and not at all
// otherwise; an HTTP/1.1 client is answered either way.
func TestHTTP2Cleartext_OnlyWhenConfigured(t *testing.T) {
	for _, on := range []bool{false, true} {
		// a stub Registrar: the server registers nothing with a leader that does not exist
		s, err := NewServer(Config{Services: stubRoles(newFollowerNode("127.0.0.1:1").services()), Logger: hclog.NewNullLogger(), RegisterInterval: time.Hour, HTTP2Cleartext: on})
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go s.Serve(l)
		url := "http://" + l.Addr().String() + "/no/such/route"

		h2 := new(http.Protocols)
		h2.SetUnencryptedHTTP2(true)
		resp, err := (&http.Client{Transport: &http.Transport{Protocols: h2}, Timeout: 10 * time.Second}).Get(url)
		switch {
		case on && err != nil:
			t.Errorf("HTTP2Cleartext on: h2c request failed: %v", err)
		case on && resp.ProtoMajor != 2:
			t.Errorf("HTTP2Cleartext on: answered over %s; want HTTP/2", resp.Proto)
		case !on && err == nil:
			t.Errorf("HTTP2Cleartext off: h2c request answered over %s (%s); want no answer", resp.Proto, resp.Status)
		}
		if resp != nil {
			resp.Body.Close()
		}

		resp, err = (&http.Client{Timeout: 10 * time.Second}).Get(url)
		if err != nil {
			t.Errorf("HTTP2Cleartext %v: HTTP/1.1 request failed: %v", on, err)
		} else {
			if resp.ProtoMajor != 1 || resp.StatusCode != http.StatusNotFound {
				t.Errorf("HTTP2Cleartext %v: HTTP/1.1 request answered %s over %s; want 404 over HTTP/1.1", on, resp.Status, resp.Proto)
			}
			resp.Body.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.Shutdown(ctx)
		cancel()
	}
}

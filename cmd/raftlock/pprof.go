package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/transport"
)

// startPprof serves Go's runtime profiles (/debug/pprof/) on addr, on a listener of its
// own rather than the API's: the profiles carry no ACL or TLS, so they must never share a
// port that clients reach. browser keeps web pages out (transport.BrowserPolicy). It is off unless --pprof-addr is given, and a non-loopback addr
// is refused, because a goroutine dump names every lock being waited for. The returned
// function stops the server.
func startPprof(addr string, browser *transport.BrowserPolicy, logger hclog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr %q: %w (give host:port, e.g. 127.0.0.1:6060)", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--pprof-addr %q: profiles are served on loopback only (127.0.0.1 or [::1]); reach them from elsewhere through an SSH tunnel", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for pprof on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// A page in a browser on this machine reaches loopback too: the listener answers only
	// for an IP address, localhost or --allowed-hosts (not a rebinding page's name) and
	// never for another origin's page. Nothing here changes state, so no content type is
	// asked for (go tool pprof posts addresses to /symbol as text).
	srv := &http.Server{Handler: browser.Wrap(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("pprof server stopped", "error", err)
		}
	}()
	logger.Info("serving Go profiles", "pprof", l.Addr().String())
	return func() { srv.Close() }, nil
}

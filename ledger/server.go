package ledger

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
)

// HTTP server timeouts.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 15 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	// ShutdownTimeout is how long Serve waits for requests in flight when ctx ends.
	ShutdownTimeout = 10 * time.Second
)

// Serve answers the ledger's HTTP API on ln until ctx ends, then shuts down gracefully:
// it stops accepting, and waits up to ShutdownTimeout for requests in flight. It returns nil
// after a clean shutdown. It closes ln.
func (l *Ledger) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           l.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          l.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	l.log.Info("serving", "addr", ln.Addr().String(), "fenced", l.cfg.Fenced, "dialect", l.cfg.Dialect.String())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	l.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

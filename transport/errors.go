package transport

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// errorFor maps an error from decoding or from the node to the API error the client sees.
// It is the only place that decides status codes.
func errorFor(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	if pe := primErrorFor(err); pe != nil {
		return pe
	}
	switch {
	case errors.Is(err, cluster.ErrLockHeld):
		return api.Errorf(api.CodeLockHeld, "the lock is held by another lease; retry later or pass wait_ms to queue for it")
	case errors.Is(err, cluster.ErrWaitTimeout):
		return api.Errorf(api.CodeWaitTimeout, "the wait ended before the lock was granted; the lease has left the queue")
	case errors.Is(err, cluster.ErrNotHolder):
		return api.Errorf(api.CodeNotHolder, "this lease and token do not hold the lock (it was released, expired or granted again)")
	case errors.Is(err, cluster.ErrLeaseNotFound):
		return api.Errorf(api.CodeLeaseNotFound, "the lease does not exist: it expired, was revoked, or never existed; create a new one")
	case errors.Is(err, cluster.ErrUnknownOutcome):
		// Checked first: the cluster wraps the cause (no leader, shutdown) in it once a
		// command may have been proposed.
		return api.Errorf(api.CodeUnknownOutcome, "leadership changed or the node stopped while the request was in flight; it may or may not have been applied, and is safe to retry")
	case errors.Is(err, cluster.ErrQuotaExceeded):
		return api.Errorf(api.CodeQuotaExceeded, "%s; nothing was applied. Release or revoke what you no longer need, or raise the limit on the servers", quotaMessage(err))
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrNotLeader):
		return api.Errorf(api.CodeNoLeader, "no leader is available (an election is in progress); nothing was applied, retry after the Retry-After delay")
	case errors.Is(err, cluster.ErrShutdown):
		return api.Errorf(api.CodeNoLeader, "this node is shutting down; nothing was applied, retry on another node")
	case errors.Is(err, cluster.ErrACLConflict):
		return api.Errorf(api.CodeConflict, "%v", err)
	case errors.Is(err, cluster.ErrACLNotFound):
		return api.Errorf(api.CodeNotFound, "%v", err)
	case errors.Is(err, cluster.ErrACLInvalid):
		return api.Errorf(api.CodeInvalidArgument, "%v", err)
	case errors.Is(err, cluster.ErrACLInactive):
		return api.Errorf(api.CodeNoLeader, "%v; upgrade every node, then retry", err)
	case errors.Is(err, cluster.ErrStorage):
		return api.Errorf(api.CodeNoLeader, "%v; nothing was applied, retry on another node", err)
	case errors.Is(err, cluster.ErrHalted):
		return api.Errorf(api.CodeInternal, "this node's state machine halted on a command it does not know; it serves nothing until it is upgraded (see its log); use another node")
	case errors.Is(err, cluster.ErrInvalidMember):
		return api.Errorf(api.CodeInvalidArgument, "%v", err)
	case errors.Is(err, cluster.ErrMemberConflict):
		return api.Errorf(api.CodeConflict, "%v", err)
	case errors.Is(err, cluster.ErrNotMember):
		return api.Errorf(api.CodeNotFound, "no such member of the cluster")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// Only reached when the cluster did not say that nothing was proposed.
		return api.Errorf(api.CodeUnknownOutcome, "the request ended before the cluster answered; it may or may not have been applied, and is safe to retry")
	}
	return api.Errorf(api.CodeInternal, "internal error: %v", err)
}

// writeError writes err as a JSON error body with its status code.
func writeError(w http.ResponseWriter, err error) {
	ae := errorFor(err)
	status := api.Status(ae.Code)
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, ae.Body())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // the client may be gone; nothing useful to do
}

// quotaMessage names the limit an ErrQuotaExceeded error reports.
func quotaMessage(err error) string {
	var q *cluster.QuotaError
	if errors.As(err, &q) {
		return q.Error()
	}
	return "a configured limit was reached"
}

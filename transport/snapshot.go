package transport

import (
	"net/http"
	"strconv"
	"time"

	"github.com/raftlock/raftlock/api"
)

// snapshotForwardWait is how long a follower lets the leader take to stream a backup it
// forwarded, on top of the usual forwarding bound: a large state takes a while to send.
const snapshotForwardWait = 5 * time.Minute

// handleSnapshot serves GET /v1/snapshot: a raftlock backup file (api.BackupHeader, then
// the state machine's canonical state) read by the leader at a linearizable point. It
// needs the admin right: the state holds every lease ID and any ACL token hashes.
func (s *Server) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	if err := s.authorize(r, accessAdmin, ""); err != nil {
		writeError(w, err)
		return
	}
	if err := knownQuery(r.URL.Query()); err != nil {
		writeError(w, err)
		return
	}
	state, sum, err := s.node.Backup(r.Context())
	if s.forwarded(w, r, nil, err, snapshotForwardWait) {
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	h := api.NewBackupHeader(sum.Index, sum.ClusterTimeMs, sum.ProtocolVersion, time.Now().UTC().Format(time.RFC3339), state)
	head := h.Encode()
	w.Header().Set("Content-Type", api.BackupContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(state)))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head); err == nil {
		_, err = w.Write(state)
		if err != nil {
			s.log.Debug("sending a snapshot was cut off", "error", err)
		}
	}
	s.log.Info("snapshot served", "index", sum.Index, "bytes", len(state))
}

package transport

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/cluster"
)

// backupForwardWait is how long a follower lets the leader take to stream a backup it
// forwarded, on top of the usual forwarding bound: a large state takes a while to send.
const backupForwardWait = 5 * time.Minute

// backupRoutes serves GET /v1/backup (and GET /v1/snapshot, its older name).
type backupRoutes struct {
	backups Backups
	log     hclog.Logger
}

// backup serves GET /v1/backup: a raftlock backup file (api.BackupHeader, then the
// state machine's canonical state) read by the leader at a linearizable point. It needs
// the admin right: the state holds every lease ID and any ACL token hashes.
func (h backupRoutes) backup(w http.ResponseWriter, r *http.Request) (call, error) {
	return call{need: accessAdmin, name: "", slow: backupForwardWait, do: func(ctx context.Context) (any, error) {
		// The query is checked after the caller is: an unauthorized caller learns nothing.
		if err := knownQuery(r.URL.Query()); err != nil {
			return nil, err
		}
		state, sum, err := h.backups.Backup(ctx)
		if err != nil {
			return nil, err
		}
		return rawAnswer(func(w http.ResponseWriter) { h.send(w, state, sum) }), nil
	}}, nil
}

// send writes the backup file of state.
func (h backupRoutes) send(w http.ResponseWriter, state []byte, sum cluster.BackupSummary) {
	hd := api.NewBackupHeader(sum.Index, sum.ClusterTimeMs, sum.ProtocolVersion, time.Now().UTC().Format(time.RFC3339), state)
	head := hd.Encode()
	w.Header().Set("Content-Type", api.BackupContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(head)+len(state)))
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(head); err == nil {
		_, err = w.Write(state)
		if err != nil {
			h.log.Debug("sending a backup was cut off", "error", err)
		}
	}
	h.log.Info("backup served", "index", sum.Index, "bytes", len(state))
}

package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/verifier"

	"github.com/raftlock/raftlock/fsm"
)

// Log verification, as Consul carries it with raft-wal: the leader writes a checkpoint
// entry every Config.VerifyInterval (when anything was written since the last one); the
// verifier below every node's log store (hashicorp/raft-wal/verifier) stamps the
// checkpoint, on the leader, with a checksum of every entry it stored since the previous
// checkpoint, and every node that stores the checkpoint then reads that range back from
// its own store and compares: a difference is corruption on the disk (read back) or on
// the way (written). It runs on both stores; it costs one read of every entry and a
// checkpoint entry a minute.

// checkpointType is the type byte of a checkpoint entry: FlagSkippable with type 127,
// which the state machine does not know and so applies as a tick (it only moves cluster
// time to the leader's stamp, like any entry), on every release: no node halts on it and
// no state changes. fsm must never give 127 to a command (TestVerify_CheckpointTypeFree).
const checkpointType = fsm.FlagSkippable | 127

// isCheckpoint tells the verifier which entries are checkpoints.
func isCheckpoint(l *raft.Log) (bool, error) {
	return l.Type == raft.LogCommand && len(l.Data) > 0 && fsm.Type(l.Data[0]) == checkpointType, nil
}

// verifiedLogs is the verifier's log store as raft sees it. The verifier writes the
// leader's checksum into every checkpoint the leader stores, so a checkpoint must reach the
// followers only after the leader's own write of it has returned: raftlock's raft
// (third_party/raft) sends every other batch while the leader writes it, and asks the
// store through raft.EarlyReplicationFilter.
type verifiedLogs struct{ *verifier.LogStore }

// SendBeforeStored says no for a checkpoint (see verifiedLogs).
func (verifiedLogs) SendBeforeStored(l *raft.Log) bool {
	cp, _ := isCheckpoint(l)
	return !cp
}

// verifyCounters counts the verifier's reports on this node.
type verifyCounters struct {
	ranges   atomic.Uint64 // checkpoint ranges verified (a report without error)
	failures atomic.Uint64 // ranges whose checksums differ: corruption
	skipped  atomic.Uint64 // ranges that could not be checked (compacted, busy, read errors)
	lastErr  atomic.Pointer[string]
}

// report receives the verifier's reports (one goroutine, in order).
func (v *verifyCounters) report(log hclog.Logger) verifier.ReportFn {
	return func(r verifier.VerificationReport) {
		var mismatch verifier.ErrChecksumMismatch
		switch {
		case r.Err == nil:
			v.ranges.Add(1)
			log.Debug("raft log verified", "range", r.Range.String(), "took", r.Elapsed)
		case errors.As(r.Err, &mismatch):
			v.failures.Add(1)
			msg := r.Err.Error()
			v.lastErr.Store(&msg)
			log.Error("RAFT LOG VERIFICATION FAILED: entries this node stored differ from what the leader wrote; "+
				"its disk (or the network) corrupted them. Stop this node, move its data directory aside and "+
				"start it again with --join, so that it catches up from the other nodes; check the disk (dmesg, SMART)",
				"range", r.Range.String(), "error", r.Err)
		default:
			v.skipped.Add(1)
			log.Debug("raft log range not verified", "range", r.Range.String(), "error", r.Err)
		}
		if r.SkippedRange != nil {
			log.Debug("raft log verification skipped a range (the verifier was busy)", "skipped", r.SkippedRange.String())
		}
	}
}

// verifyLoop writes a checkpoint every VerifyInterval while this node leads, when
// anything was committed since the last one, until ctx ends.
func (l *leader) verifyLoop(ctx context.Context) {
	n := l.n
	every := n.cfg.VerifyInterval
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if idx := n.raft.LastIndex(); idx == last {
			continue // nothing written since the last checkpoint: an idle cluster stays idle
		}
		if _, err := n.prop.apply(&fsm.Command{Type: checkpointType}); err != nil {
			n.log.Debug("log verification checkpoint failed; the next one covers its range", "error", err)
			continue
		}
		last = n.raft.LastIndex()
	}
}

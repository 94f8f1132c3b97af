package cluster

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/raftlock/raftlock/fsm"
	"github.com/raftlock/raftlock/internal/mutant"
)

// DefaultTokenGap is how far above a backup's index a restored cluster starts its log
// (RestoreIndex). Tokens are Raft log indexes, and the cluster that was lost may have
// written entries after the backup was taken; the gap must exceed how many, so that every
// grant after the restore has a token above every token the lost cluster issued. A billion
// entries is years of a busy cluster, and costs nothing: an index is a uint64.
const DefaultTokenGap uint64 = 1_000_000_000

// RestoreIndex returns the log index a cluster rebuilt from a backup taken at
// snapshotIndex starts at: max(snapshotIndex + gap, floor). Every grant after the restore
// has a token above it. An operator who knows the highest token any storage accepted may
// give it as floor (plus one, or more, for safety) instead of relying on the gap.
func RestoreIndex(snapshotIndex, gap, floor uint64) (uint64, error) {
	if gap > math.MaxUint64-snapshotIndex {
		return 0, fmt.Errorf("%w: backup index %d plus token gap %d overflows", ErrRestoreIndex, snapshotIndex, gap)
	}
	if mutant.Is("restore-resets-base") {
		return snapshotIndex, nil
	}
	return max(snapshotIndex+gap, floor), nil
}

// keyCurrentTerm is the stable-store key under which hashicorp/raft keeps the current
// term (raft.go's keyCurrentTerm, which raft does not export).
var keyCurrentTerm = []byte("CurrentTerm")

// RestoreDataDir prepares an empty data directory so that a node started on it (New, or
// `raftlock serve`) begins from state: raft finds a snapshot at index with term 1 whose
// configuration has peers as voters, restores the state machine from it, and continues
// the log at index+1. state must be a state machine encoding whose applied index is index
// (fsm.PrepareRestore's output). Run it on every node of the new cluster with the same
// state, index and peers, before any of them starts.
//
// The directory gets the privacy cluster.New gives it (mode 0700, files 0600) and is
// locked while it is written; a directory that already holds Raft state is refused with
// ErrExistingState and left as it was.
func RestoreDataDir(dir string, state []byte, index uint64, peers []Peer, logger hclog.Logger) (err error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if len(peers) == 0 {
		return fmt.Errorf("%w: a restore needs the new cluster's voters", ErrInvalidMember)
	}
	seen := map[string]bool{}
	var servers []raft.Server
	for _, p := range peers {
		if !ValidID(p.ID) {
			return fmt.Errorf("%w: node ID %q", ErrInvalidMember, p.ID)
		}
		if err := ValidateAddr("raft address of "+p.ID, p.RaftAddr); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidMember, err)
		}
		if seen[p.ID] {
			return fmt.Errorf("%w: node ID %q listed twice", ErrInvalidMember, p.ID)
		}
		seen[p.ID] = true
		servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr), Suffrage: raft.Voter})
	}
	sum, err := fsm.InspectSnapshot(state)
	if err != nil {
		return fmt.Errorf("cluster: restore state: %w", err)
	}
	if sum.Index != index {
		return fmt.Errorf("%w: the state's applied index is %d, the snapshot's would be %d", ErrRestoreIndex, sum.Index, index)
	}

	unlock, err := openDataDir(dir)
	if err != nil {
		return err
	}
	defer unlock()
	// A restored directory is a new one: it gets the default store, raft-wal, unless it
	// already holds a store (which the check below then refuses if it has state).
	kind, _, err := ResolveLogStore(dir, LogStoreAuto)
	if err != nil {
		return err
	}
	store, err := openLogStore(dir, kind, 0, logger)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := store.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("cluster: closing the log store in %s: %w", dir, cerr)
		}
	}()
	fileSnaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logger.Named("snapshots"))
	if err != nil {
		return fmt.Errorf("cluster: snapshot store: %w", err)
	}
	snaps := privateSnapshots{SnapshotStore: fileSnaps, dir: filepath.Join(dir, "snapshots")}
	has, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		return fmt.Errorf("cluster: reading raft state in %s: %w", dir, err)
	}
	if has {
		return fmt.Errorf("%w: %s; a restore only fills an empty data directory (move this one aside first)", ErrExistingState, dir)
	}

	// A crash part-way leaves partial state, which a second restore refuses: move the
	// directory aside and run the restore again.
	// Create encodes the configuration's legacy peer list with a transport; the in-memory
	// one encodes an address as its bytes, exactly as the TCP and TLS transports do.
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, 1, raft.Configuration{Servers: servers}, index, trans)
	if err != nil {
		return fmt.Errorf("cluster: creating the snapshot: %w", err)
	}
	if _, err := sink.Write(state); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: writing the snapshot: %w", err)
	}
	if err := sink.Close(); err != nil { // fsyncs the state and its metadata
		return fmt.Errorf("cluster: finishing the snapshot: %w", err)
	}
	if err := store.SetUint64(keyCurrentTerm, 1); err != nil {
		return fmt.Errorf("cluster: setting the term: %w", err)
	}
	if err := restrictTree(dir); err != nil {
		return fmt.Errorf("cluster: making %s private: %w", dir, err)
	}
	logger.Info("data directory restored", "dir", dir, "index", index, "voters", len(servers))
	return nil
}

package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// LogStoreKind names the store that keeps a node's Raft log and its stable values (term,
// vote). The zero value is LogStoreAuto: the store the data directory already holds, and
// raft-wal for a new one.
type LogStoreKind string

const (
	// LogStoreAuto chooses by the data directory (ResolveLogStore): an existing raft.db
	// keeps BoltDB, an existing wal/ keeps raft-wal, and a new or empty directory gets
	// raft-wal. The zero value of Config.LogStore.
	LogStoreAuto LogStoreKind = "auto"
	// LogStoreBoltDB keeps log and stable values in one BoltDB file, DataDir/raft.db
	// (hashicorp/raft-boltdb): the store hashicorp/raft has shipped with for years, and
	// raftlock's default before raft-wal. Every commit costs two fdatasyncs (data pages,
	// then the meta page).
	LogStoreBoltDB LogStoreKind = "boltdb"
	// LogStoreWAL keeps the log in append-only segment files under DataDir/wal
	// (hashicorp/raft-wal) and the stable values in that WAL's own meta database,
	// DataDir/wal/wal-meta.db, which raft-wal provides as its StableStore. One fdatasync
	// per commit; raft-wal's README still calls it experimental (docs/DECISIONS.md, "The
	// log store"). The store of every new data directory.
	LogStoreWAL LogStoreKind = "wal"
)

// LogStoreKinds lists the valid settings, the default first.
var LogStoreKinds = []LogStoreKind{LogStoreAuto, LogStoreWAL, LogStoreBoltDB}

// String returns the kind's name, "auto" for the zero value.
func (k LogStoreKind) String() string {
	if k == "" {
		return string(LogStoreAuto)
	}
	return string(k)
}

// ParseLogStoreKind returns the kind named s ("auto", "wal" or "boltdb"; empty means auto).
func ParseLogStoreKind(s string) (LogStoreKind, error) {
	switch LogStoreKind(s) {
	case "", LogStoreAuto:
		return LogStoreAuto, nil
	case LogStoreBoltDB:
		return LogStoreBoltDB, nil
	case LogStoreWAL:
		return LogStoreWAL, nil
	}
	return "", fmt.Errorf("cluster: config: unknown log store %q (want auto, wal or boltdb)", s)
}

// ResolveLogStore returns the store a node configured with want opens in dir, and why:
// an explicit kind wins; with LogStoreAuto (or zero) an existing store keeps its kind
// and a directory without one gets raft-wal.
func ResolveLogStore(dir string, want LogStoreKind) (LogStoreKind, string, error) {
	if want != "" && want != LogStoreAuto {
		return want, "configured (--raft-log-store)", nil
	}
	have, found, err := DetectLogStore(dir)
	switch {
	case err != nil:
		return "", "", err
	case !found:
		return LogStoreWAL, "new data directory: raft-wal is the default", nil
	case have == LogStoreBoltDB:
		return LogStoreBoltDB, "the data directory holds a BoltDB log (raft.db)", nil
	}
	return LogStoreWAL, "the data directory holds a raft-wal log (wal/)", nil
}

// Paths of each store inside the data directory.
const (
	boltFile = "raft.db"
	walDir   = "wal"
	walMeta  = "wal-meta.db" // raft-wal's meta database, inside walDir
)

// DetectLogStore reports which kind of log store the data directory dir already holds, and
// false when it holds none (a new or wiped directory, which may be given either kind). A
// directory holding both is an error: an operator mixed two nodes' files.
func DetectLogStore(dir string) (LogStoreKind, bool, error) {
	exists := func(p string) (bool, error) {
		_, err := os.Stat(p)
		if err == nil {
			return true, nil
		}
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("cluster: inspecting %s: %w", p, err)
	}
	bolt, err := exists(filepath.Join(dir, boltFile))
	if err != nil {
		return "", false, err
	}
	w, err := exists(filepath.Join(dir, walDir, walMeta))
	if err != nil {
		return "", false, err
	}
	switch {
	case bolt && w:
		return "", false, fmt.Errorf("%w: %s holds both %s and %s/%s; an interrupted `raftlock log-store convert` leaves both: run it again; "+
			"otherwise keep the one this node last ran with and move the other away",
			ErrLogStoreMismatch, dir, boltFile, walDir, walMeta)
	case bolt:
		return LogStoreBoltDB, true, nil
	case w:
		return LogStoreWAL, true, nil
	}
	return "", false, nil
}

// checkLogStore refuses a data directory written by another kind of store than want, with
// the conversion procedure in the message.
func checkLogStore(dir string, want LogStoreKind) error {
	have, found, err := DetectLogStore(dir)
	if err != nil || !found || have == want {
		return err
	}
	return fmt.Errorf("%w: %s was written with --raft-log-store=%s but this node was started with --raft-log-store=%s. "+
		"Start it with --raft-log-store=%s (or auto) to keep its data, or convert it: with the node stopped, "+
		"`raftlock log-store convert --data-dir %s --to %s`; or remove the node from the cluster "+
		"(raftlock cluster remove ID), delete its data directory, and start it again with --raft-log-store=%s "+
		"and --join pointing at a member, so that it catches up from the leader's snapshot; see docs/OPERATIONS.md",
		ErrLogStoreMismatch, dir, have, want, have, dir, want, want)
}

// logStoreChosen logs which store the node opens and why; a BoltDB directory kept by the
// automatic choice also gets how to move it to raft-wal.
func logStoreChosen(log hclog.Logger, dir string, want, kind LogStoreKind, why string) {
	if kind == LogStoreBoltDB && (want == "" || want == LogStoreAuto) {
		log.Warn("this data directory holds a BoltDB Raft log (raft.db) from before raft-wal became the default store; "+
			"it keeps BoltDB, which stays supported. To move it to raft-wal, stop the node and run "+
			"`raftlock log-store convert --data-dir DIR --to wal`, or remove, wipe and re-join it (docs/OPERATIONS.md, "+
			"\"The log store, and changing it\"); to keep BoltDB and silence this, set --raft-log-store=boltdb",
			"data_dir", dir)
		return
	}
	log.Info("raft log store", "store", kind, "why", why, "data_dir", dir)
}

// walSegmentSize, when not zero, is the size of raft-wal's segment files of nodes whose
// Config.WALSegmentSize is zero. Tests shrink it: raft-wal still serves entries truncated
// from the head while they sit in the open tail segment, so only a sealed and deleted
// segment makes a leader fall back to sending a snapshot.
var walSegmentSize int

// logStore is what a node needs of its store: raft's log and stable stores, closed once.
type logStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

// openLogStore opens (or creates) the store of the given kind in dir, after checking that
// dir holds no store of another kind.
func openLogStore(dir string, kind LogStoreKind, walSegment int, logger hclog.Logger) (logStore, error) {
	if err := checkLogStore(dir, kind); err != nil {
		return nil, err
	}
	switch kind {
	case LogStoreWAL:
		return openWAL(dir, walSegment, logger)
	default:
		p := filepath.Join(dir, boltFile)
		s, err := raftboltdb.New(raftboltdb.Options{Path: p})
		if err != nil {
			return nil, fmt.Errorf("cluster: opening %s: %w", p, err)
		}
		return s, nil
	}
}

package cluster

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// A data directory holds every lease ID (they are bearer secrets) in its log and
// snapshots, so it is private to the user that runs the node.
const (
	dataDirMode  os.FileMode = 0o700
	dataFileMode os.FileMode = 0o600
)

// openDataDir creates the data directory (or tightens an existing one to dataDirMode) and
// takes its lock file, so that a second process pointed at the same directory fails at
// once with a clear error instead of blocking forever inside BoltDB.
func openDataDir(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, dataDirMode); err != nil {
		return nil, fmt.Errorf("cluster: creating data dir: %w", err)
	}
	if err := os.Chmod(dir, dataDirMode); err != nil {
		return nil, fmt.Errorf("cluster: making data dir %s private: %w", dir, err)
	}
	return lockDataDir(dir)
}

// privateSnapshots wraps a snapshot store so that every snapshot it writes is readable by
// the node's user only, whatever the process umask.
type privateSnapshots struct {
	raft.SnapshotStore
	dir string // the store's snapshots directory
	// written, when set, is told the index of each snapshot once it is complete (the
	// snapshot stagger moves raft's threshold from there).
	written func(index uint64)
}

func (p privateSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := p.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return privateSink{SnapshotSink: sink, dir: p.dir, index: index, written: p.written}, nil
}

type privateSink struct {
	raft.SnapshotSink
	dir     string
	index   uint64
	written func(index uint64)
}

// Close finishes the snapshot, then restricts its directory and files.
func (s privateSink) Close() error {
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	if s.written != nil {
		s.written(s.index)
	}
	return restrictTree(filepath.Join(s.dir, s.ID()))
}

// restrictTree makes a directory tree private: directories dataDirMode, files dataFileMode.
func restrictTree(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := dataFileMode
		if d.IsDir() {
			mode = dataDirMode
		}
		return os.Chmod(path, mode)
	})
}

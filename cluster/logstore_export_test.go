package cluster

// SetWALSegmentSize makes raft-wal nodes opened from now on use segments of size bytes,
// so that a test's head truncation deletes whole segments; the returned func restores
// the default.
func SetWALSegmentSize(size int) (restore func()) {
	old := walSegmentSize
	walSegmentSize = size
	return func() { walSegmentSize = old }
}

// SetWALFaults makes the segment file operations ("write", "sync", "create") of raft-wal
// nodes fail with what f returns for their data directory and the operation (nil: no
// fault); the returned func removes it.
func SetWALFaults(f func(dir, op string) error) (restore func()) {
	old := walFaults
	walFaults = f
	return func() { walFaults = old }
}

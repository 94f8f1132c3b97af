package cluster

// SetWALSegmentSize makes raft-wal nodes opened from now on use segments of size bytes,
// so that a test's head truncation deletes whole segments; the returned func restores
// the default.
func SetWALSegmentSize(size int) (restore func()) {
	old := walSegmentSize
	walSegmentSize = size
	return func() { walSegmentSize = old }
}

//go:build !unix

package cluster

// lockDataDir does nothing where flock is not available; BoltDB's own file lock remains.
func lockDataDir(dir string) (func(), error) { return func() {}, nil }

// freeBytes is unknown where statfs is not available.
func freeBytes(dir string) (uint64, bool) { return 0, false }

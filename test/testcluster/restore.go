package testcluster

import "path/filepath"

// ID returns node i's server ID.
func (p *Processes) ID(i int) string { return p.ids[i] }

// DataDir returns node i's data directory, for tests that wipe or restore it while the
// node is stopped.
func (p *Processes) DataDir(i int) string { return filepath.Join(p.dir, p.ids[i]) }

// Bootstrap returns the --bootstrap list every node is started with.
func (p *Processes) Bootstrap() string { return p.boot }

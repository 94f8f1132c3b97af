//go:build !unix

package testkit

import "io"

// reserve makes no reservation across processes off Unix: the process's own record is
// all that guards a port there.
func reserve(int) (io.Closer, bool) { return nil, true }

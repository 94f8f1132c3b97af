//go:build unix

package testkit

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// reserveDir holds one file per port that a test process has handed out, naming the
// process. No descriptor stays open for it (a process may hand out thousands of ports);
// a file whose process is gone is stale and taken over.
var reserveDir = filepath.Join(os.TempDir(), "raftlock-test-ports")

// reserveDirMade makes reserveDir once per process and reports whether it exists.
var reserveDirMade = sync.OnceValue(func() bool { return os.MkdirAll(reserveDir, 0o777) == nil })

// reserve claims port p for this process. It reports false when a live process other than
// this one holds it; when no claim can be made at all (no writable temporary directory)
// it answers true with nothing to release, and the process's own record is all that
// guards the port.
func reserve(p int) (io.Closer, bool) {
	if !reserveDirMade() {
		return nil, true
	}
	name := filepath.Join(reserveDir, strconv.Itoa(p))
	me := os.Getpid()
	for try := 0; try < 2; try++ {
		// Written aside and linked into place, so that no reader ever sees a half-written
		// file; the link fails if the name exists.
		tmp := name + "." + strconv.Itoa(me)
		if err := os.WriteFile(tmp, []byte(strconv.Itoa(me)), 0o666); err != nil {
			return nil, true
		}
		err := os.Link(tmp, name)
		os.Remove(tmp)
		if err == nil {
			return claim{name, me}, true
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, true
		}
		b, err := os.ReadFile(name)
		if err != nil {
			continue // removed meanwhile: try again
		}
		if pid, err := strconv.Atoi(string(b)); err == nil && pid != me && alive(pid) {
			return nil, false
		}
		os.Remove(name) // its process is gone
	}
	return nil, false
}

// alive reports whether process pid exists (EPERM: it does, as another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// claim is a reservation; Close releases it if it is still this process's.
type claim struct {
	name string
	pid  int
}

func (c claim) Close() error {
	if b, err := os.ReadFile(c.name); err == nil && string(b) == strconv.Itoa(c.pid) {
		return os.Remove(c.name)
	}
	return nil
}

package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// WorkerBinary builds test/verify/bankworker once per test process and returns its path.
// It is built without -race even under a race-enabled test: two dozen instrumented worker
// processes would halve the workload's rate on two cores, and the state its goroutines share
// is the in-process bank worker's (workload.RunBank), which the short campaign runs under
// -race.
func WorkerBinary(t testing.TB) string {
	t.Helper()
	return worker.Path(t)
}

// worker is test/verify/bankworker as WorkerBinary builds it.
var worker = &testcluster.OnceBuild{DirPrefix: "raftlock-bankworker-", Name: "bankworker", Pkg: "./test/verify/bankworker"}

// PauseRecord is one SIGSTOP pause of a worker process.
type PauseRecord struct {
	// Stopped is how long the process was seen stopped: from the moment /proc showed it
	// stopped to the moment SIGCONT was sent. It is a lower bound of the real stop.
	Stopped time.Duration
}

// Worker is a bankworker process. Each "pause" line it prints is answered by stopping it
// with SIGSTOP, keeping it stopped for the pause duration once /proc shows it stopped,
// SIGCONT, and the line "go" on its stdin.
type Worker struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	pause time.Duration
	done  chan struct{}

	mu      sync.Mutex
	pauses  []PauseRecord
	errs    []string
	summary string
	exitErr error
}

// StartWorker starts bin with args; its stderr goes to logPath. Every pause request stops it
// for pause.
func StartWorker(bin string, args []string, pause time.Duration, logPath string) (*Worker, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("harness: starting bankworker: %w", err)
	}
	w := &Worker{cmd: cmd, stdin: stdin, pause: pause, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer logf.Close()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "pause":
				w.pauseOnce()
			case strings.HasPrefix(line, "done "):
				w.mu.Lock()
				w.summary = line
				w.mu.Unlock()
			default:
				w.fail(fmt.Sprintf("unexpected line %q", line))
			}
		}
		err := cmd.Wait()
		w.mu.Lock()
		w.exitErr = err
		w.mu.Unlock()
	}()
	return w, nil
}

func (w *Worker) fail(msg string) {
	w.mu.Lock()
	w.errs = append(w.errs, msg)
	w.mu.Unlock()
}

// pauseOnce stops the worker, waits until it is stopped, keeps it so for w.pause, and lets
// it go on.
func (w *Worker) pauseOnce() {
	pid := w.cmd.Process.Pid
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		w.fail(fmt.Sprintf("SIGSTOP: %v", err))
	} else {
		if !testkit.Poll(5*time.Second, time.Millisecond, func() bool { return Stopped(pid) }) {
			w.fail("not stopped 5 s after SIGSTOP")
		}
		seen := time.Now()
		time.Sleep(w.pause)
		stopped := time.Since(seen)
		if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			w.fail(fmt.Sprintf("SIGCONT: %v", err))
		}
		w.mu.Lock()
		w.pauses = append(w.pauses, PauseRecord{Stopped: stopped})
		w.mu.Unlock()
	}
	if _, err := io.WriteString(w.stdin, "go\n"); err != nil {
		w.fail(fmt.Sprintf("writing go: %v", err))
	}
}

// Stopped reports whether process pid is stopped (state T in /proc/<pid>/stat).
func Stopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return false
	}
	return s[i+2] == 'T'
}

// Wait waits until the worker has exited, at most timeout (then kills it), and returns an
// error if it failed or a pause went wrong.
func (w *Worker) Wait(timeout time.Duration) error {
	select {
	case <-w.done:
	case <-time.After(timeout):
		_ = w.cmd.Process.Signal(syscall.SIGCONT)
		_ = w.cmd.Process.Kill()
		<-w.done
		w.fail(fmt.Sprintf("still running %v after it should have ended; killed", timeout))
	}
	w.stdin.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	if w.exitErr != nil {
		errs = append(errs, fmt.Errorf("exit: %w", w.exitErr))
	}
	for _, e := range w.errs {
		errs = append(errs, errors.New(e))
	}
	if w.summary == "" && len(errs) == 0 {
		errs = append(errs, errors.New("exited without its summary line"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("harness: bankworker pid %d: %w", w.cmd.Process.Pid, err)
	}
	return nil
}

// Pauses returns the worker's pauses so far.
func (w *Worker) Pauses() []PauseRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]PauseRecord(nil), w.pauses...)
}

// Summary returns the worker's "done ..." line (empty until it printed it).
func (w *Worker) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.summary
}

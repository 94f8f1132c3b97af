package benchkit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, which Linux fixes
// at 100 for user space on every common architecture.
const userHZ = 100

// ProcCPU returns the CPU time (user plus system, all threads) that process pid has used.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may contain spaces: fields are
	// counted after its closing parenthesis. utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("benchkit: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("benchkit: /proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("benchkit: /proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// SelfCPU returns the CPU time this process has used, with microsecond resolution.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ProcMem returns the resident set size of process pid and its peak, in bytes, from
// VmRSS and VmHWM in /proc/<pid>/status.
func ProcMem(pid int) (rss, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(val) // "123456 kB"
		if len(fields) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("benchkit: /proc/%d/status %s: %w", pid, key, err)
		}
		if key == "VmRSS" {
			rss = kb << 10
		} else {
			peak = kb << 10
		}
	}
	return rss, peak, sc.Err()
}

// ProcArgs returns the command line of process pid.
func ProcArgs(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), nil
}

// ProcAlive reports whether process pid exists and is not a zombie.
func ProcAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+3 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// FlagValue returns the value of flag name ("--data-dir") in args, written as
// "--data-dir v", "--data-dir=v", or with a single dash; "" when absent.
func FlagValue(args []string, name string) string {
	short := strings.TrimPrefix(name, "-")
	for i, a := range args {
		for _, n := range []string{name, short} {
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
		}
	}
	return ""
}

// FindProcs returns the pids of the processes whose command line satisfies match, in
// ascending order. Processes that vanish while being read are skipped.
func FindProcs(match func(args []string) bool) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		args, err := ProcArgs(pid)
		if err != nil || len(args) == 0 || !ProcAlive(pid) {
			continue
		}
		if match(args) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ReadPIDFiles reads the pid files matching a glob (such as "$RAFTLOCK_STATE/n*/pid")
// and returns the pids of live processes.
func ReadPIDFiles(glob string) []int {
	files, _ := filepath.Glob(glob)
	var pids []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && ProcAlive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ServerPIDs finds the server processes a tool charges CPU to: the pids given (a
// comma-separated list), else the live ones of the pid files matching pidGlob (scripts'
// state directories; "" for none), else a /proc scan with match. It may find none.
func ServerPIDs(pids, pidGlob string, match func(args []string) bool) ([]int, error) {
	if pids != "" {
		return ParsePIDs(pids)
	}
	if pidGlob != "" {
		if found := ReadPIDFiles(pidGlob); len(found) > 0 {
			return found, nil
		}
	}
	return FindProcs(match), nil
}

// SplitList splits a comma-separated flag value (endpoints, pids), dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// ParsePIDs parses a comma-separated list of pids.
func ParsePIDs(s string) ([]int, error) {
	var pids []int
	for _, f := range SplitList(s) {
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("benchkit: %q is not a pid", f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// MachineBusy returns the CPU time all cores of the machine have spent busy (not idle,
// not waiting for I/O) since boot, from the first line of /proc/stat.
func MachineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("benchkit: /proc/stat: unexpected first line %q", line)
	}
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("benchkit: /proc/stat: %w", err)
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / userHZ, nil
}

// CPUMeter measures the CPU used by a set of processes, and by this process, between
// Start and Stop.
type CPUMeter struct {
	pids  []int
	start map[int]time.Duration
	self  time.Duration
	mach  time.Duration
	t0    time.Time
}

// NewCPUMeter returns a meter over pids; it is not started.
func NewCPUMeter(pids []int) *CPUMeter { return &CPUMeter{pids: pids} }

// Start records the starting readings.
func (m *CPUMeter) Start() {
	m.start = map[int]time.Duration{}
	for _, p := range m.pids {
		if c, err := ProcCPU(p); err == nil {
			m.start[p] = c
		}
	}
	m.self = SelfCPU()
	m.mach, _ = MachineBusy()
	m.t0 = time.Now()
}

// CPUUse is what a CPUMeter measured.
type CPUUse struct {
	// Wall is the time between Start and Stop.
	Wall time.Duration
	// Servers is the CPU time used by the measured processes (those that could be read
	// at both ends); PerPID breaks it down.
	Servers time.Duration
	PerPID  map[int]time.Duration
	// Self is the CPU time used by this process (the load generator).
	Self time.Duration
	// Machine is the busy time of the whole machine, every process included.
	Machine time.Duration
	// Measured reports whether any server process was read.
	Measured bool
}

// Others returns the CPU time used by everything but the servers and this process: other
// work on a shared machine, which the figures do not account for.
func (u CPUUse) Others() time.Duration {
	return max(0, u.Machine-u.Servers-u.Self)
}

// Cores converts a CPU time over the wall time into a number of busy cores.
func (u CPUUse) Cores(d time.Duration) float64 {
	if u.Wall <= 0 {
		return 0
	}
	return float64(d) / float64(u.Wall)
}

// Stop takes the final readings.
func (m *CPUMeter) Stop() CPUUse {
	u := CPUUse{Wall: time.Since(m.t0), Self: SelfCPU() - m.self, PerPID: map[int]time.Duration{}}
	if mach, err := MachineBusy(); err == nil {
		u.Machine = mach - m.mach
	}
	for p, c0 := range m.start {
		if c, err := ProcCPU(p); err == nil {
			u.PerPID[p] = c - c0
			u.Servers += c - c0
			u.Measured = true
		}
	}
	return u
}

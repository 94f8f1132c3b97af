package netns_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/raftlock/raftlock/test/testkit"
)

// network is a bridge in the root namespace with one network namespace ("host") per node
// behind it, all in one /24 of 198.18.0.0/15:
//
//	root namespace: bridge rlnbV, 198.18.X.1/24 ── veth rlnvVxI ══ veth rlnpVxI: 198.18.X.(11+I)/24, in namespace NS(I)
//
// where V (0..511) picks the /24 and names the devices, so two runs on one machine use
// different subnets and device names.
type network struct {
	t      *testing.T
	v      int    // the /24's number in 198.18.0.0/15
	prefix string // "198.18.X." or "198.19.X."
	bridge string
	ns     []string
	undo   []func() // run in reverse order by Cleanup
}

// subnetSeq makes each test in a process start its search for a free /24 elsewhere.
var subnetSeq atomic.Int32

// ipCmdTimeout bounds every `ip` command; none should take more than a moment.
const ipCmdTimeout = 10 * time.Second

// newNetwork creates n namespaces joined by a bridge, or skips the test (fails it under CI)
// when the machine refuses: not root, no `ip`, or namespaces, bridges or veths not permitted.
func newNetwork(t *testing.T, n int) *network {
	t.Helper()
	if euid := os.Geteuid(); euid != 0 {
		testkit.Unavailable(t, "netns: needs root to create network namespaces, bridges and veth pairs; running as euid %d", euid)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		testkit.Unavailable(t, "netns: the `ip` command (iproute2) is not installed: %v", err)
	}
	sweepDeadRuns(t)
	nw := &network{t: t}
	// One cleanup, registered before anything exists, undoes whatever was created.
	t.Cleanup(nw.teardown)

	// Pick a /24 derived from the PID; skip over any that a bridge name or an address in
	// the root namespace shows to be in use (another run, or leftovers of a killed one).
	start := (os.Getpid()*7 + int(subnetSeq.Add(1))*3) % 512
	for try := 0; ; try++ {
		if try == 64 {
			t.Fatalf("netns: no free /24 in 198.18.0.0/15 after 64 tries (leftover rlnb* bridges? `ip -br link`)")
		}
		v := (start + try) % 512
		prefix := fmt.Sprintf("198.%d.%d.", 18+v/256, v%256)
		if nw.subnetInUse(prefix) {
			continue
		}
		bridge := fmt.Sprintf("rlnb%d", v)
		out, err := runIP("link", "add", bridge, "type", "bridge")
		if err != nil {
			if strings.Contains(out, "File exists") {
				continue
			}
			skipIfRefused(t, "ip link add "+bridge+" type bridge", out, err)
			t.Fatalf("netns: ip link add %s type bridge: %v: %s", bridge, err, out)
		}
		nw.v, nw.prefix, nw.bridge = v, prefix, bridge
		nw.undo = append(nw.undo, func() { _, _ = runIP("link", "del", bridge) })
		break
	}
	nw.must("addr", "add", nw.HostIP()+"/24", "dev", nw.bridge)
	nw.must("link", "set", nw.bridge, "up")

	for i := 0; i < n; i++ {
		name := fmt.Sprintf("raftlock-test-%d-v%d-n%d", os.Getpid(), nw.v, i+1)
		if out, err := runIP("netns", "add", name); err != nil {
			skipIfRefused(t, "ip netns add "+name, out, err)
			t.Fatalf("netns: ip netns add %s: %v: %s", name, err, out)
		}
		nw.ns = append(nw.ns, name)
		nw.undo = append(nw.undo, func() { _, _ = runIP("netns", "del", name) })

		root, peer := fmt.Sprintf("rlnv%dx%d", nw.v, i), fmt.Sprintf("rlnp%dx%d", nw.v, i)
		nw.must("link", "add", root, "type", "veth", "peer", "name", peer)
		// Deleting either end deletes the pair; the namespace's end goes with the namespace
		// too, but a pair whose move failed would stay behind in the root namespace.
		nw.undo = append(nw.undo, func() { _, _ = runIP("link", "del", root) })
		nw.must("link", "set", root, "master", nw.bridge)
		nw.must("link", "set", root, "up")
		nw.must("link", "set", peer, "netns", name)
		nw.must("-n", name, "addr", "add", nw.IP(i)+"/24", "dev", peer)
		nw.must("-n", name, "link", "set", peer, "up")
		nw.must("-n", name, "link", "set", "lo", "up")
	}
	t.Logf("netns: bridge %s %s/24, namespaces %v at %s11..%s%d", nw.bridge, nw.HostIP(), nw.ns, nw.prefix, nw.prefix, 10+n)
	return nw
}

// nsPattern matches the namespaces newNetwork names: the PID of the test process that
// made them, the subnet number, the node.
var nsPattern = regexp.MustCompile(`^raftlock-test-(\d+)-v(\d+)-n\d+$`)

// sweepDeadRuns removes what an earlier run of these tests left behind when it could not
// clean up (killed by a -timeout panic or SIGKILL): its namespaces, veths and bridge, found
// by the names newNetwork gives them, and only when the process that made them is gone.
func sweepDeadRuns(t *testing.T) {
	t.Helper()
	out, err := runIP("netns", "list")
	if err != nil {
		return // newNetwork reports what the machine refuses
	}
	dead := map[string]bool{} // subnet numbers whose devices are to go
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		m := nsPattern.FindStringSubmatch(f[0])
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		if pid <= 0 || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue // its maker is alive (or the PID is not ours to judge)
		}
		t.Logf("netns: removing namespace %s, left behind by process %d, which is gone", f[0], pid)
		_, _ = runIP("netns", "del", f[0])
		dead[m[2]] = true
	}
	if len(dead) == 0 {
		return
	}
	links, err := runIP("-br", "link", "show")
	if err != nil {
		return
	}
	for _, l := range strings.Split(links, "\n") {
		lf := strings.Fields(l)
		if len(lf) == 0 {
			continue
		}
		dev, _, _ := strings.Cut(lf[0], "@")
		for v := range dead {
			if strings.HasPrefix(dev, "rlnv"+v+"x") || dev == "rlnb"+v {
				t.Logf("netns: removing device %s of the same run", dev)
				_, _ = runIP("link", "del", dev)
			}
		}
	}
}

// HostIP is the bridge's address: where the test process's packets come from.
func (nw *network) HostIP() string { return nw.prefix + "1" }

// IP is namespace i's address.
func (nw *network) IP(i int) string { return fmt.Sprintf("%s%d", nw.prefix, 11+i) }

// Unused is an address in the subnet that no namespace holds: somewhere to point a forged
// registration that, were it ever accepted, leads nowhere outside the test's bridge.
func (nw *network) Unused() string { return nw.prefix + "99" }

// must runs an `ip` command of the setup; a refusal by the machine skips the test, any
// other failure fails it.
func (nw *network) must(args ...string) {
	nw.t.Helper()
	if out, err := runIP(args...); err != nil {
		cmd := "ip " + strings.Join(args, " ")
		skipIfRefused(nw.t, cmd, out, err)
		nw.t.Fatalf("netns: %s: %v: %s", cmd, err, out)
	}
}

// subnetInUse reports whether any address of the root namespace starts with prefix.
func (nw *network) subnetInUse(prefix string) bool {
	out, err := runIP("-4", "-o", "addr", "show")
	if err != nil {
		skipIfRefused(nw.t, "ip -4 -o addr show", out, err)
		nw.t.Fatalf("netns: ip -4 -o addr show: %v: %s", err, out)
	}
	return strings.Contains(out, " "+prefix)
}

// teardown removes everything newNetwork created, newest first. Node processes must be
// gone by then: their cleanups were registered later, so they ran first.
func (nw *network) teardown() {
	for i := len(nw.undo) - 1; i >= 0; i-- {
		nw.undo[i]()
	}
	nw.undo = nil
	if nw.bridge == "" {
		return
	}
	out, _ := runIP("-br", "link", "show")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == nw.bridge || strings.HasPrefix(f[0], fmt.Sprintf("rlnv%dx", nw.v))) {
			nw.t.Errorf("netns: device %s still present after cleanup", f[0])
		}
	}
}

// command runs argv inside namespace i (ip netns exec execs it in place, so the process's
// PID is argv[0]'s own).
func (nw *network) command(ctx context.Context, i int, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", nw.ns[i]}, argv...)...)
}

// dialTCP opens a TCP connection from the root namespace to addr, with a short timeout.
func dialTCP(addr string) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, 3*time.Second)
}

func runIP(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ipCmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// skipIfRefused skips the test (fails it under CI) when an `ip` command failed because the machine does not
// allow it (no permission, or the kernel lacks the feature), naming the command.
func skipIfRefused(t *testing.T, cmd, out string, err error) {
	t.Helper()
	for _, s := range []string{"Operation not permitted", "Permission denied", "not supported", "Not supported", "Unknown device type"} {
		if strings.Contains(out, s) {
			testkit.Unavailable(t, "netns: the machine refused `%s`: %s (%v)", cmd, out, err)
		}
	}
}

package nemesis

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ProcSource returns an IdentifyFunc for loopback connections on Linux: it finds the
// connecting socket in /proc/net/tcp (its local address is the accepted connection's remote
// address, its remote address the proxy's), takes its inode, and looks for the process
// among pids() that holds a file descriptor on that socket. pids maps a process ID to a node
// index; it is called once per connection, so it may change as nodes restart.
func ProcSource(pids func() map[int]int) IdentifyFunc {
	return func(c net.Conn) int {
		local, lok := c.RemoteAddr().(*net.TCPAddr)
		remote, rok := c.LocalAddr().(*net.TCPAddr)
		if !lok || !rok {
			return Unknown
		}
		// The connecting side has the socket before it sends its SYN, so one look is
		// normally enough; a few retries cover a /proc read racing a busy machine.
		for attempt := 0; attempt < 3; attempt++ {
			inode, err := socketInode(local, remote)
			if err == nil {
				for pid, node := range pids() {
					if holdsSocket(pid, inode) {
						return node
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
		return Unknown
	}
}

// procAddr renders an IPv4 address the way /proc/net/tcp does: the 32-bit address in host
// (little-endian) byte order, then the port, both in upper-case hex.
func procAddr(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return ""
	}
	return fmt.Sprintf("%02X%02X%02X%02X:%04X", ip[3], ip[2], ip[1], ip[0], a.Port)
}

// socketInode finds the inode of the socket whose local address is local and whose peer is
// remote.
func socketInode(local, remote *net.TCPAddr) (string, error) {
	want1, want2 := procAddr(local), procAddr(remote)
	if want1 == "" || want2 == "" {
		return "", fmt.Errorf("nemesis: not IPv4: %v %v", local, remote)
	}
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[1] != want1 || fields[2] != want2 {
			continue
		}
		return fields[9], nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", ErrNoProcess
}

// holdsSocket reports whether process pid has a file descriptor on socket inode.
func holdsSocket(pid int, inode string) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := "socket:[" + inode + "]"
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == want {
			return true
		}
	}
	return false
}

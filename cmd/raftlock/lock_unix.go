//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// groupAlive reports whether a process of the command's process group (its ID is the
// command's PID, thanks to Setpgid) still runs. Zombies count as gone: they run no code,
// and an orphan's zombie lingers until its new parent reaps it, which may be never in a
// container whose init does not.
func groupAlive(cmd *exec.Cmd) bool {
	pgid := cmd.Process.Pid
	err := syscall.Kill(-pgid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return false
	}
	if err != nil {
		return true // EPERM: a member runs as another user, so there is one
	}
	return groupHasLiveMember(pgid)
}

// groupHasLiveMember looks in /proc for a process of group pgid that is not a zombie. It
// answers true when /proc cannot tell (not Linux, not mounted): kill(2) said the group
// exists.
func groupHasLiveMember(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	found := false
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		found = true
		// pid (comm) state ppid pgrp ...; comm may contain spaces and parentheses.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		if pg, err := strconv.Atoi(f[2]); err == nil && pg == pgid && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return !found
}

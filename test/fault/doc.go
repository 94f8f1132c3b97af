// Package fault holds process-level fault tests of the server: real `raftlock serve`
// processes killed with SIGKILL or paused with SIGSTOP while a client keeps its lease alive.
package fault

// Package backup holds the end-to-end test of backup and restore: three real `raftlock
// serve` processes, a backup saved with the CLI, every data directory wiped, the cluster
// restored with the CLI, and a fenced SQLite table from before the wipe that must accept
// the first token after the restore (and refuse it when the token floor is removed).
package backup

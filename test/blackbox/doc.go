// Package blackbox tests raftlock as a stranger would: three real `raftlock serve`
// processes, and a client written from README's API table with nothing but net/http and
// encoding/json (no client/ package, whose retries could hide what a plain client meets).
package blackbox

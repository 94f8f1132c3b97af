//go:build mutants

package testcluster

// mutantTags builds server binaries with the mutants tag when the tests themselves carry
// it, so that RAFTLOCK_MUTANT, which the servers inherit, selects the same mutant in them.
var mutantTags = []string{"-tags", "mutants"}

//go:build !mutants

package testcluster

// mutantTags is empty: tests without the mutants tag run servers without mutants.
var mutantTags []string

// Package mutant is the registry of raftlock's deliberate bugs, for the mutation campaign
// (docs/SAFETY.md, "Mutants"): each mutant is a small, realistic break of one safety
// mechanism, named for what it breaks, and each must be caught ("killed") by a test.
//
// The registry exists only in builds with the `mutants` build tag. There, the environment
// variable RAFTLOCK_MUTANT, read once when the process starts, selects at most one mutant,
// and Is reports whether it is the one. In every other build Is is a constant false that
// the compiler inlines, so each hook `if mutant.Is("name") { ... }` and everything only it
// calls is removed from the binary (test/mutants checks the default binary for it).
//
// A hook in fsm is a fixed change of behaviour chosen at process start: every replica of a
// mutated cluster applies the same mutated function, so Apply stays deterministic.
package mutant

// Env is the environment variable that selects a mutant in a build with the mutants tag.
const Env = "RAFTLOCK_MUTANT"

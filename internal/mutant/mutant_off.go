//go:build !mutants

package mutant

// Is reports whether the named mutant is active: never, in a build without the mutants tag.
func Is(string) bool { return false }

// Enabled reports whether this build carries the mutant registry.
const Enabled = false

// Names lists the registered mutants: none in a build without the mutants tag.
func Names() []Mutant { return nil }

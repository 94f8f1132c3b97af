package mutant

// Mutant describes one registered mutant.
type Mutant struct {
	// Name is the value of RAFTLOCK_MUTANT that selects it.
	Name string
	// Breaks says in one line what it breaks.
	Breaks string
}

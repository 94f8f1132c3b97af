// Package mutants holds the mutation campaign's checks that need no mutant: that the
// default raftlock binary carries no mutant code, and that the campaign's kill table
// (kills.txt, run by scripts/mutants.sh) names every registered mutant. See
// docs/SAFETY.md, "Mutants".
package mutants

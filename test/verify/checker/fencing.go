package checker

import (
	"fmt"
	"strconv"
	"strings"
)

// Account is the ledger's final record of one account.
type Account struct {
	ID           string
	BalanceCents int64
	// Opening is the balance the campaign set before any charge.
	Opening int64
	// Lock is the lock that protects the account.
	Lock    string
	Charges []AppliedCharge
}

// AppliedCharge is one charge in the ledger's history, in the order applied.
type AppliedCharge struct {
	ChargeID    string
	AmountCents int64
	Token       uint64
}

// FencingStats are the fencing checker's counts for the campaign table.
type FencingStats struct {
	Applied       int // charges in the ledgers' histories
	RefusedStale  int // charges answered 409 stale_token
	StaleAccepted int // applied charges whose token is below one applied before them
	DoubleJobs    int // jobs applied more than once
}

// JobOf returns the job number of a job charge id ("j/<account>/<job>/<attempt>", as
// workload.JobCharge writes it), or -1 for any other charge. The workload reads its
// ledger's answers with it too, so that both read the one format.
func JobOf(id string) int {
	parts := strings.Split(id, "/")
	if len(parts) != 4 || parts[0] != "j" {
		return -1
	}
	n, err := strconv.Atoi(parts[2])
	if err != nil {
		return -1
	}
	return n
}

// CheckFencing checks the accounts against the charges the workload sent and the grants it
// was given.
func CheckFencing(ops []Op, accounts []Account) (*Verdict, FencingStats) {
	v := newVerdict("fencing")
	var st FencingStats
	sent := map[string]Op{}
	grants := map[string]map[uint64]bool{}
	for _, o := range ops {
		switch {
		case o.Kind == KindCharge:
			sent[o.ChargeID] = o
			if o.Outcome == OutStale {
				st.RefusedStale++
			}
		case o.Kind == KindAcquire && o.Outcome == OutOK:
			if grants[o.Lock] == nil {
				grants[o.Lock] = map[uint64]bool{}
			}
			grants[o.Lock][o.Token] = true
		}
	}
	applied := map[string]bool{}
	for _, a := range accounts {
		var sum, maxTok uint64
		var maxID string
		jobs := map[int]string{}
		for _, c := range a.Charges {
			v.Checked++
			st.Applied++
			sum += uint64(c.AmountCents)
			if applied[c.ChargeID] {
				v.add("charge_applied_twice", fmt.Sprintf("account %s: charge %s appears twice", a.ID, c.ChargeID))
			}
			applied[c.ChargeID] = true
			if c.Token < maxTok {
				st.StaleAccepted++
				v.add("stale_write_accepted", fmt.Sprintf("account %s: charge %s with token %d applied after charge %s with token %d; sent as %s",
					a.ID, c.ChargeID, c.Token, maxID, maxTok, sent[c.ChargeID]))
			} else {
				maxTok, maxID = c.Token, c.ChargeID
			}
			o, ok := sent[c.ChargeID]
			switch {
			case !ok:
				v.add("unknown_charge", fmt.Sprintf("account %s: charge %s was never sent", a.ID, c.ChargeID))
			case o.Amount != c.AmountCents || o.Token != c.Token || o.Account != a.ID:
				v.add("charge_mismatch", fmt.Sprintf("account %s: charge %s applied as %d cents with token %d, sent as %s", a.ID, c.ChargeID, c.AmountCents, c.Token, o))
			case o.Outcome == OutStale:
				v.add("refused_but_applied", fmt.Sprintf("account %s: charge %s was refused as stale but is applied: %s", a.ID, c.ChargeID, o))
			}
			if !grants[a.Lock][c.Token] {
				v.add("token_never_granted", fmt.Sprintf("account %s: charge %s carries token %d, never granted for %s", a.ID, c.ChargeID, c.Token, a.Lock))
			}
			if j := JobOf(c.ChargeID); j >= 0 {
				if prev, dup := jobs[j]; dup {
					st.DoubleJobs++
					v.add("double_applied_job", fmt.Sprintf("account %s: job %d applied by charge %s (token %d) and earlier by %s; sent as %s",
						a.ID, j, c.ChargeID, c.Token, prev, sent[c.ChargeID]))
				}
				jobs[j] = c.ChargeID
			}
		}
		if want := a.Opening - int64(sum); a.BalanceCents != want {
			v.add("balance_mismatch", fmt.Sprintf("account %s: balance %d, but opening %d minus %d applied cents is %d", a.ID, a.BalanceCents, a.Opening, sum, want))
		}
	}
	// Acknowledged charges must be applied.
	accts := map[string]bool{}
	for _, a := range accounts {
		accts[a.ID] = true
	}
	for id, o := range sent {
		if o.Outcome == OutOK && accts[o.Account] && !applied[id] {
			v.add("acknowledged_charge_lost", fmt.Sprintf("charge %s was acknowledged but is not in the ledger: %s", id, o))
		}
	}
	return v, st
}

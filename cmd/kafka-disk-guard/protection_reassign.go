package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
)

// Replication throttles of cross-broker reassignments (spec R3.8) in the
// operator's commands: status shows each claim with its values now; lift
// restores them and removes the claim.

func reassignOwners(recs ledger.Records) []string {
	out := make([]string, 0, len(recs.Reassigns))
	for o := range recs.Reassigns {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// reassignStatus reads each claimed value now.
func reassignStatus(ctx context.Context, admin *kafkaadmin.Enforce, recs ledger.Records) []ledger.ReassignStatus {
	var out []ledger.ReassignStatus
	r := admin.Relief()
	for _, o := range reassignOwners(recs) {
		c := recs.Reassigns[o]
		s := ledger.ReassignStatus{ReassignClaim: c}
		for _, e := range c.Entries {
			v, set, err := r.ThrottleConfig(ctx, e.Resource, e.Name, e.Key)
			n := ledger.EntryNow{Value: v, Set: set}
			if err != nil {
				n.Unread = err.Error()
			}
			s.Current = append(s.Current, n)
		}
		out = append(out, s)
	}
	return out
}

// writeReassigns prints the replication throttles the guard holds.
func writeReassigns(w io.Writer, rs []ledger.ReassignStatus, now time.Time) {
	if len(rs) == 0 {
		return
	}
	fmt.Fprintln(w, "\nReassignments across brokers (replication throttle):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OWNER\tSTATE\tSINCE\tVALUES SET (NOW)\tMOVES")
	for _, r := range rs {
		state := "held"
		switch {
		case r.Undecodable:
			state = "undecodable"
		case r.Releasing:
			state = "releasing"
		}
		var vals []string
		for i, e := range r.Entries {
			now := "?"
			if i < len(r.Current) {
				switch n := r.Current[i]; {
				case n.Unread != "":
					now = "not read"
				case !n.Set:
					now = "none"
				default:
					now = n.Value
				}
			}
			vals = append(vals, fmt.Sprintf("%s (%s)", e, now))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Owner, state, since(r.Since, now), dash(strings.Join(vals, "; ")), dash(strings.Join(r.Moves, "; ")))
	}
	tw.Flush()
}

// liftReassigns restores every replication throttle claim in the lift's
// scope (all, or the one an agent of its broker holds) and removes the
// claims, as the lift's operator.
func liftReassigns(ctx context.Context, admin *kafkaadmin.Enforce, recs ledger.Records, req ledger.LiftRequest) (restored, remaining []string) {
	r := admin.Relief()
	for _, o := range reassignOwners(recs) {
		if !req.All && o != ledger.ReassignOwner(req.Broker) {
			continue
		}
		c := recs.Reassigns[o]
		rel := enforcer.ReassignRelease{Admin: r, Store: admin, Claim: c, Instance: req.By}
		if err := enforcer.ReleaseReassignWithin(ctx, rel, 15*time.Second); err != nil {
			remaining = append(remaining, fmt.Sprintf("the replication throttle claimed by %s (%v)", o, err))
			continue
		}
		restored = append(restored, fmt.Sprintf("the replication throttle claimed by %s (%d values removed or given back)", o, len(c.Entries)))
	}
	return restored, remaining
}

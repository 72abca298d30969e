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

// Move throttles (spec R3.8) in the operator's commands: status shows
// each claim with the broker's value now; lift restores the operator's
// value and removes the claim.

// throttleStatus reads each claimed broker's value now.
func throttleStatus(ctx context.Context, admin *kafkaadmin.Enforce, recs ledger.Records) []ledger.ThrottleStatus {
	var out []ledger.ThrottleStatus
	m := admin.LogDirMoves()
	for _, id := range sortedIDs(recs.Throttles) {
		c := recs.Throttles[id]
		s := ledger.ThrottleStatus{ThrottleClaim: c}
		s.Current, s.CurrentSet, _ = m.Throttle(ctx, id)
		out = append(out, s)
	}
	return out
}

func sortedIDs(m map[int32]ledger.ThrottleClaim) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// writeThrottles prints the move throttles the guard holds.
func writeThrottles(w io.Writer, ts []ledger.ThrottleStatus, now time.Time) {
	if len(ts) == 0 {
		return
	}
	fmt.Fprintln(w, "\nMoves within a broker (throttle "+enforcer.ThrottleKey+"):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tSTATE\tSET\tNOW\tOPERATOR'S\tSINCE\tMOVES")
	for _, t := range ts {
		state := "held"
		if t.Releasing {
			state = "releasing"
		}
		cur := "none"
		if t.CurrentSet {
			cur = t.Current
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", t.BrokerID, state, t.Value, cur, ledger.ShowValue(t.Orig),
			since(t.Since, now), dash(strings.Join(t.Moves, "; ")))
	}
	tw.Flush()
}

// liftThrottles restores the operator's throttle of every claimed broker
// in scope (all, or one broker) and removes the claims. It returns what
// it restored and what is still in place.
func liftThrottles(ctx context.Context, admin *kafkaadmin.Enforce, recs ledger.Records, all bool, broker int32) (restored, remaining []string) {
	m := admin.LogDirMoves()
	for _, id := range sortedIDs(recs.Throttles) {
		if !all && id != broker {
			continue
		}
		c := recs.Throttles[id]
		if err := enforcer.RestoreThrottle(ctx, m, c); err != nil {
			remaining = append(remaining, fmt.Sprintf("broker %d %s=%s (%v)", id, c.Key, c.Value, err))
			continue
		}
		if err := admin.DeleteThrottle(ctx, id); err != nil {
			remaining = append(remaining, fmt.Sprintf("broker %d's throttle claim (%v)", id, err))
			continue
		}
		restored = append(restored, fmt.Sprintf("broker %d %s back to %s (the guard had set %s)", id, c.Key, ledger.ShowValue(c.Orig), c.Value))
	}
	return restored, remaining
}

package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// runProtectionResume withdraws operators' lifts: the agents may protect
// again at once.
func runProtectionResume(ctx context.Context, args []string, getenv env, out streams) error {
	p := newProtectionFlags("resume", getenv, out.stderr)
	var scope brokerScope
	scope.register(p.fs, false)
	admin, ctx, done, err := p.open(ctx, args, func() error { return scope.check("resume", false) })
	if admin == nil {
		return err
	}
	defer done()
	recs, err := admin.LoadRecords(ctx)
	if err != nil {
		return fmt.Errorf("read the protection records: %w", err)
	}
	logger := slog.New(slog.NewJSONHandler(out.stderr, nil))
	var resumed []int32
	for _, id := range slices.Sorted(maps.Keys(recs.Lifts)) {
		l := recs.Lifts[id]
		if (!scope.all && id != int32(scope.broker)) || l.Kind != ledger.LiftOperator {
			continue
		}
		if err := admin.DeleteLift(ctx, id); err != nil {
			return fmt.Errorf("withdraw the lift of broker %d: %w", id, err)
		}
		resumed = append(resumed, id)
		logger.Info("operator's lift withdrawn", "by", operatorName(getenv), "broker_id", id, "lift_id", l.ID)
	}
	if len(resumed) == 0 {
		fmt.Fprintln(out.stdout, "Nothing to resume: no operator's lift in that scope.")
		return nil
	}
	fmt.Fprintf(out.stdout, "Withdrew the operator's lift of broker(s) %v: their agents may protect again.\n", resumed)
	return nil
}

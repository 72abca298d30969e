package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// runProtectionLift lifts protection as an operator: the lift is
// recorded (the agents acknowledge it), then every binding it voids that
// no other live record claims is deleted; bindings no record claims are
// never touched. One log line (JSON, stderr) says what was done.
func runProtectionLift(ctx context.Context, args []string, getenv env, out streams) error {
	p := newProtectionFlags("lift", getenv, out.stderr)
	var scope brokerScope
	scope.register(p.fs, true)
	why := p.fs.String("reason", "", "why, recorded with the lift (e.g. \"disk grown\", \"uninstall\")")
	admin, ctx, done, err := p.open(ctx, args, func() error { return scope.check("lift", true) })
	if admin == nil {
		return err
	}
	defer done()
	req := ledger.LiftRequest{All: scope.all, Broker: int32(scope.broker), Topic: scope.topic,
		By: operatorName(getenv), Reason: *why, Now: time.Now()}
	res, err := ledger.LiftProtection(ctx, admin, req)
	// The move throttles (spec R3.8) of the brokers lifted whole.
	var throttlesRestored []string
	if scope.topic == "" {
		if recs, lerr := admin.LoadRecords(ctx); lerr == nil {
			var left []string
			throttlesRestored, left = liftThrottles(ctx, admin, recs, scope.all, int32(scope.broker))
			res.Remaining = append(res.Remaining, left...)
			restored, left := liftReassigns(ctx, admin, recs, req)
			throttlesRestored = append(throttlesRestored, restored...)
			res.Remaining = append(res.Remaining, left...)
		}
	}
	for _, r := range throttlesRestored {
		fmt.Fprintf(out.stdout, "Restored %s.\n", r)
	}
	return reportLift(out, req, res, err, throttlesRestored)
}

// reportLift tells the operator what a lift did and returns the command's
// error: non-nil (exit 1) while anything it was asked to lift may still be
// in place, a record that does not decode included (what that broker
// claims is unknown, so nothing of it was lifted; issue 20 point 2: the
// uninstall hook fails loudly rather than leave it unnoticed).
func reportLift(out streams, req ledger.LiftRequest, res ledger.LiftResult, err error, throttlesRestored []string) error {
	logger := slog.New(slog.NewJSONHandler(out.stderr, nil))
	ids, attrs := liftAttrs(req, res)
	for _, id := range res.Untouchable {
		fmt.Fprintf(out.stdout, "Left alone: broker %d's latest record does not decode (garbage, or a newer guard); its claims are lifted once it writes a readable one.\n", id)
	}
	if errors.Is(err, ledger.ErrLedgerMissing) {
		// A cluster where the guard never protected anything (observe
		// mode's uninstall), or one whose ledger was deleted: no record
		// names anything, so nothing is known to be left in place.
		fmt.Fprintln(out.stdout, "The ownership topic does not exist: no record names anything to lift (bindings that look like the guard's are listed by `protection status`).")
		return nil
	}
	for _, r := range res.Remaining {
		fmt.Fprintf(out.stdout, "Still in place: %s.\n", r)
	}
	if err == nil && len(res.Remaining) > 0 {
		err = fmt.Errorf("%d change(s) the lift was asked to remove are still in place: run the lift again", len(res.Remaining))
	}
	if err == nil && len(res.Untouchable) > 0 {
		err = fmt.Errorf("the records of broker(s) %v do not decode: what they claim was left in place (see `protection status`; "+
			"run the lift again once their agents write readable records, or remove what they set by hand)", res.Untouchable)
	}
	if err != nil {
		logger.Error("protection lift by an operator failed", append(attrs, "remaining", res.Remaining, "err", err)...)
		return err
	}
	released := len(res.Released.ACLs) > 0 || res.Released.QuotaRemoved || len(res.Released.Configs) > 0 || len(res.Uncordoned) > 0 || len(throttlesRestored) > 0
	if len(res.Lifts) == 0 && released {
		fmt.Fprintf(out.stdout, "Released what earlier lifts or releases left in place: %d binding(s) deleted.\n", len(res.Released.ACLs))
		return nil
	}
	if len(res.Lifts) == 0 {
		fmt.Fprintln(out.stdout, "Nothing to lift: no record claims protection in that scope.")
		return nil
	}
	logger.Warn("protection lifted by an operator", attrs...)
	printLifted(out.stdout, ids, res)
	return nil
}

// printLifted tells the operator what a lift released, restored and left.
func printLifted(w io.Writer, ids []int32, res ledger.LiftResult) {
	fmt.Fprintf(w, "Lifted the protection of broker(s) %v: %d binding(s) deleted, %d kept (claimed by another agent)", ids,
		len(res.Released.ACLs), res.Released.Kept)
	if res.Released.QuotaRemoved {
		fmt.Fprint(w, ", default client quota removed")
	}
	fmt.Fprintln(w, ".")
	for _, c := range res.Released.Configs {
		fmt.Fprintf(w, "Restored %s of topic %s to %s (the guard had set %s).\n", c.Key, c.Topic, ledger.ShowValue(c.Value), ledger.ShowValue(c.From))
	}
	for _, u := range res.Uncordoned {
		fmt.Fprintf(w, "Uncordoned log dir of %s (the operator's cordoned.log.dirs entries stay).\n", u)
	}
	for _, c := range res.Released.ConfigsChanged {
		fmt.Fprintf(w, "Left %s of topic %s at %s: changed by an operator since the guard set %s.\n", c.Key, c.Topic, ledger.ShowValue(c.Value), ledger.ShowValue(c.From))
	}
	fmt.Fprintln(w, "A running agent acknowledges the lift and does not protect that scope again until its disk calms down;")
	fmt.Fprintln(w, "`kafka-disk-guard protection resume` lets it protect again at once.")
}

// liftAttrs returns the brokers a lift was written for and the log
// attributes of the lift.
func liftAttrs(req ledger.LiftRequest, res ledger.LiftResult) ([]int32, []any) {
	var ids []int32
	var liftIDs []string
	for _, l := range res.Lifts {
		ids = append(ids, l.BrokerID)
		liftIDs = append(liftIDs, l.ID)
	}
	return ids, []any{"by", req.By, "reason", req.Reason, "broker_ids", ids, "topic", req.Topic, "all", req.All,
		"lift_ids", liftIDs, "acls_deleted", len(res.Released.ACLs), "acls_kept", res.Released.Kept, "quota_removed", res.Released.QuotaRemoved,
		"configs_restored", len(res.Released.Configs), "configs_kept", res.Released.ConfigsKept, "configs_changed_by_operator", len(res.Released.ConfigsChanged),
		"uncordoned", res.Uncordoned}
}

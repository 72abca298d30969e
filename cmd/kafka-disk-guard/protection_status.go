package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
)

// runProtectionStatus prints every protection in place as the records and
// the cluster hold it.
func runProtectionStatus(ctx context.Context, args []string, getenv env, out streams) error {
	p := newProtectionFlags("status", getenv, out.stderr)
	format := p.fs.String("format", "table", "table or json")
	topics := p.fs.Bool("topics", false, "table: list every protected topic with its bindings")
	admin, ctx, done, err := p.open(ctx, args, func() error {
		if *format != "table" && *format != "json" {
			return usageError{fmt.Sprintf("protection status: --format %q is not table or json", *format)}
		}
		return nil
	})
	if admin == nil {
		return err
	}
	defer done()

	in, err := readStatusInput(ctx, admin, out.stderr)
	if err != nil {
		return err
	}
	st := ledger.BuildStatus(in)
	st.MoveThrottles = throttleStatus(ctx, admin, in.Records)
	st.ReplicationThrottles = reassignStatus(ctx, admin, in.Records)
	if *format == "json" {
		enc := json.NewEncoder(out.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return err
		}
	} else {
		writeStatus(out.stdout, st, *topics, in.Now)
		writeThrottles(out.stdout, st.MoveThrottles, in.Now)
		writeReassigns(out.stdout, st.ReplicationThrottles, in.Now)
	}
	if st.LedgerLost != "" {
		return fmt.Errorf("the protection ledger is lost: %s", st.LedgerLost)
	}
	return nil
}

// readStatusInput reads what the status is made of: the records, the
// topic ACLs, the default quota, the live brokers, the claimed topics'
// configs and replicas and the claimed brokers' cordons. What is only
// information (replicas, cordons) is reported on stderr when not read.
func readStatusInput(ctx context.Context, admin *kafkaadmin.Enforce, stderr io.Writer) (ledger.StatusInput, error) {
	in := ledger.StatusInput{Now: time.Now()}
	var err error
	in.Records, err = admin.LoadRecords(ctx)
	switch {
	case errors.Is(err, ledger.ErrLedgerLost):
		// Shown, with what the cluster holds; the command fails.
		in.Records, in.LedgerLost = ledger.NewRecords(), err.Error()
	case err != nil:
		return in, fmt.Errorf("read the protection records: %w", err)
	}
	switch acls, err := admin.TopicACLs(ctx); {
	case errors.Is(err, enforcer.ErrNoAuthorizer):
		in.NoAuthorizer = true
	case err != nil:
		return in, fmt.Errorf("list acls: %w", err)
	default:
		in.ACLs = acls
	}
	if in.DefaultProducerByteRate, err = admin.DefaultProducerQuota(ctx); err != nil {
		return in, fmt.Errorf("describe client quotas: %w", err)
	}
	live, err := admin.LiveBrokers(ctx)
	if err != nil {
		return in, fmt.Errorf("list brokers: %w", err)
	}
	in.Live = map[int32]bool{}
	for _, id := range live {
		in.Live[id] = true
	}
	if ts := in.Records.ConfigTopics(); len(ts) > 0 {
		if in.TopicConfigs, err = admin.TopicConfigOverrides(ctx, ts, enforcer.LocalRetentionBytesKey); err != nil {
			return in, fmt.Errorf("describe topic configs: %w", err)
		}
		// The reach of a lowered value is information: without it the
		// status still shows, saying "not read".
		if in.Replicas, err = admin.TopicReplicas(ctx, ts); err != nil {
			fmt.Fprintf(stderr, "protection status: the topics' replicas not read: %v\n", err)
		}
	}
	for _, id := range in.Records.CordonBrokers() {
		c, err := admin.LogDirCordons(ctx, id)
		if err != nil {
			fmt.Fprintf(stderr, "protection status: cordoned.log.dirs of broker %d not read: %v\n", id, err)
			continue
		}
		if in.Cordons == nil {
			in.Cordons = map[int32]ledger.BrokerCordons{}
		}
		in.Cordons[id] = c
	}
	return in, nil
}

// writeStatus prints the status as tables.
func writeStatus(w io.Writer, st ledger.Status, topics bool, now time.Time) {
	if st.NoAuthorizer {
		fmt.Fprintln(w, "The brokers run without an authorizer: ACL protection cannot apply (use protection.strategy quota).")
	}
	if st.LedgerLost != "" {
		fmt.Fprintf(w, "LEDGER LOST: %s.\nNo record can be read: nothing is claimed or released on its word. See docs/operating.md (the ledger is lost).\n", st.LedgerLost)
	}
	if len(st.Brokers) == 0 && st.LedgerLost == "" {
		fmt.Fprintln(w, "No protection record: the guard has protected nothing.")
	} else if len(st.Brokers) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BROKER\tSTATE\tSTRATEGY\tSINCE\tLEASE\tTOPICS\tBINDINGS IN PLACE\tWHY")
		for _, b := range st.Brokers {
			bindings := fmt.Sprintf("%d/%d", b.Present, b.Claimed)
			if b.Quota > 0 {
				bindings += fmt.Sprintf(" + quota %d B/s (%s)", b.Quota, map[bool]string{true: "in place", false: "not in place"}[b.QuotaSet])
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", b.BrokerID, b.State, dash(b.Strategy), since(b.Since, now),
				lease(b), len(b.Topics), bindings, why(b))
		}
		tw.Flush()
		for _, b := range st.Brokers {
			if l := b.Lift; l != nil {
				ack := "not acknowledged yet"
				if b.LiftAcked {
					ack = "acknowledged"
				}
				scope := "everything"
				if len(l.Topics) > 0 {
					scope = "topics " + strings.Join(l.Topics, ",")
				}
				fmt.Fprintf(w, "broker %d: lifted (%s) by %s at %s: %s (%s)%s\n", b.BrokerID, l.Kind, l.By,
					l.At.UTC().Format(time.RFC3339), scope, ack, reason(l.Reason))
			}
			if s := b.Suppressed; s != nil {
				fmt.Fprintf(w, "broker %d: not protecting again until its disk calms down or `protection resume --broker %d`\n", b.BrokerID, b.BrokerID)
			}
			if b.Undecodable > 0 {
				fmt.Fprintf(w, "broker %d: %d record value(s) that do not decode (garbage, or a newer guard): its claims are left alone until it writes a readable one\n",
					b.BrokerID, b.Undecodable)
			}
			for _, r := range b.Releasing {
				state := "gone, leaving the record"
				if r.InPlace {
					state = "STILL IN PLACE: retried every pass, or run `protection lift`"
				}
				fmt.Fprintf(w, "broker %d: releasing %s %s%s: %s\n", b.BrokerID, r.Kind, r.What, onTopic(r.Topic), state)
			}
		}
	}
	writeConfigs(w, st)
	writeCordons(w, st)
	if topics {
		for _, b := range st.Brokers {
			if len(b.Topics) == 0 {
				continue
			}
			fmt.Fprintf(w, "\nbroker %d protects:\n", b.BrokerID)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TOPIC\tBINDINGS\tIN PLACE\tLIFTED")
			for _, t := range b.Topics {
				fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%v\n", t.Topic, t.Shape, t.Present, t.Claimed, !t.Live)
			}
			tw.Flush()
		}
	}
	if len(st.Unattributed) > 0 || st.UnattributedQuota > 0 {
		fmt.Fprintln(w, "\nOperator-owned (unattributed): look like the guard's, but no record claims them: an operator's, or")
		fmt.Fprintln(w, "set by the guard before it died unrecorded. The guard counts an identical one as protection in place")
		fmt.Fprintln(w, "and never claims, changes or lifts it: decide yourself.")
		for _, a := range st.Unattributed {
			fmt.Fprintf(w, "  topic %s: %s %s %s from %s\n", a.Topic, a.Permission, a.Operation, a.Principal, a.Host)
		}
		if st.UnattributedQuota > 0 {
			fmt.Fprintf(w, "  default client quota: producer_byte_rate=%d\n", st.UnattributedQuota)
		}
	}
}

// writeConfigs lists the tiered topics' local retention the guard lowered
// (spec R7.4), with the operator's value it restores.
func writeConfigs(w io.Writer, st ledger.Status) {
	brokerTable(w, st.Brokers, "Local retention lowered on tiered topics (restored when the disk calms down, by a peer after the lease, or by `protection lift`):",
		"BROKER\tTOPIC\tCONFIG\tSET TO\tOPERATOR'S VALUE\tNOW\tREACHES (CLUSTER-WIDE)\tLIFTED",
		func(b ledger.BrokerStatus) (rows []string) {
			for _, c := range b.Configs {
				now := ledger.ShowValue(c.Current)
				if !c.InPlace {
					now += " (changed by an operator: left alone)"
				}
				rows = append(rows, fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s\t%s\t%v", b.BrokerID, c.Topic, c.Key, c.Value, ledger.ShowValue(c.Original), ifRead(c.Read, now), reaches(c.Replicas), !c.Live))
			}
			return rows
		})
}

// ifRead is v, or "not read".
func ifRead(read bool, v string) string {
	if !read {
		return "not read"
	}
	return v
}

// brokerTable writes a table under a title, with the rows each broker
// gives; nothing when no broker gives one.
func brokerTable(w io.Writer, brokers []ledger.BrokerStatus, title, header string, rows func(ledger.BrokerStatus) []string) {
	var all []string
	for _, b := range brokers {
		all = append(all, rows(b)...)
	}
	if len(all) == 0 {
		return
	}
	fmt.Fprintln(w, "\n"+title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range all {
		fmt.Fprintln(tw, r)
	}
	tw.Flush()
}

func onTopic(t string) string {
	if t == "" {
		return ""
	}
	return " on topic " + t
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func since(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%s (%s ago)", t.UTC().Format(time.RFC3339), now.Sub(t).Round(time.Second))
}

func lease(b ledger.BrokerStatus) string {
	if b.Renewed.IsZero() || b.Lease == 0 {
		return "-"
	}
	age := b.LeaseAge.Round(time.Second)
	if b.ExpiresIn < 0 {
		return fmt.Sprintf("renewed %s ago, expired %s ago", age, (-b.ExpiresIn).Round(time.Second))
	}
	return fmt.Sprintf("renewed %s ago, %s left", age, b.ExpiresIn.Round(time.Second))
}

func why(b ledger.BrokerStatus) string {
	var parts []string
	for _, w := range b.Why {
		parts = append(parts, fmt.Sprintf("%s: %s band at %.1f%%", w.LogDir, w.Band, w.Usage*100))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "; ")
}

func reason(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}

// reaches says how far a topic's lowered local retention goes: every
// replica on every broker holding one.
func reaches(r *ledger.TopicReplicas) string {
	if r == nil {
		return "every replica (not read)"
	}
	return fmt.Sprintf("%d replicas on %d brokers", r.Replicas, r.Brokers)
}

// writeCordons lists the log dirs the guard cordoned (KIP-1066), and the
// operator's cordons beside them.
func writeCordons(w io.Writer, st ledger.Status) {
	brokerTable(w, st.Brokers, "Cordoned log dirs (no new partition is placed in them; uncordoned when the disk calms down, by a peer after the lease, or by `protection lift`):",
		"BROKER\tLOG DIR\tBY\tIN PLACE\tLIFTED",
		func(b ledger.BrokerStatus) (rows []string) {
			for _, c := range b.Cordons {
				rows = append(rows, fmt.Sprintf("%d\t%s\tguard\t%s\t%v", b.BrokerID, c.Dir, ifRead(c.Read, fmt.Sprint(c.InPlace)), !c.Live))
			}
			for _, d := range b.OperatorCordons {
				rows = append(rows, fmt.Sprintf("%d\t%s\toperator (never removed by the guard)\ttrue\t-", b.BrokerID, d))
			}
			return rows
		})
}

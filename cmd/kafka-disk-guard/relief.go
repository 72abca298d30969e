package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/human"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/relief"
)

const reliefUsage = `usage: kafka-disk-guard relief plan [flags]

Plans moving replicas off brokers whose disk is in a band onto brokers
with room (spec R3.8), the lossless relief before anything unexpired is
purged: disk capacity first (no destination passes --target), then racks
(the replica's own rack, else a rack none of the partition's other
replicas is on), leaders kept (a broker gives up only replicas it
follows). Prints every broker's usage before and after, the moves, and
the JSON kafka-reassign-partitions.sh --reassignment-json-file takes (and
the rollback JSON). Broker usage is DescribeLogDirs' total and usable
bytes (Kafka 3.3+), or with --capacity-bytes the bytes of each broker's
partitions against that capacity.

With --execute it runs the plan as kafka-reassign-partitions.sh --execute
--throttle does: a replication throttle on the brokers and topics the
moves touch, AlterPartitionReassignments, a wait until Kafka has moved
every replica, then the throttle removed. The throttle is a claim in the guard's
ownership topic (throttle-reassign-cli-<host>), recorded before any value
is set and removed once every value is read back restored; an execute
refuses while another reassignment's claim is held. Interrupted (Ctrl-C,
--timeout), the reassignment goes on in Kafka with its throttle: a guard
agent restores the throttle once the moves are done and the claim's lease
has passed, "protection lift --all" at once, and the command prints the
kafka-configs.sh commands too. The agent never starts such a move on its
own unless enforcer.relief.reassign is true.

Connection: the flags below and KDG_* variables, or --config with the
guard's configuration file (its kafka section; its enforcer profile gives
the default --band). Exit 0: done (or nothing to move); 1: the cluster
could not be read or the reassignment failed; 2: usage.

flags:
`

type reliefFlags struct {
	kf           kafkaFlags
	config       string
	band, target float64
	capacity     int64
	maxMoves     int
	exclude      string
	execute      bool
	throttle     int64
	timeout      time.Duration
	jsonOut      string
}

func runRelief(ctx context.Context, args []string, getenv env, out streams) error {
	return subcommands{"relief", reliefUsage, []namedSubcommand{{"plan", runReliefPlan}}}.run(ctx, args, getenv, out)
}

func runReliefPlan(ctx context.Context, args []string, getenv env, out streams) error {
	f, err := parseReliefFlags(args, out)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	st, err := f.settings(getenv)
	if err != nil {
		return err
	}
	link := kafkaadmin.NewLink(st.kafka, slog.New(slog.DiscardHandler), kafkaadmin.LinkOptions{})
	if err := link.Connect(); err != nil {
		return err
	}
	defer link.Close()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	adm := link.Relief()
	cluster, err := adm.ReadCluster(ctx, f.capacity)
	if err != nil {
		return fmt.Errorf("read the cluster: %w", err)
	}
	var exclude []string
	for _, t := range strings.Split(f.exclude, ",") {
		if t = strings.TrimSpace(t); t != "" {
			exclude = append(exclude, t)
		}
	}
	plan := relief.Compute(cluster, relief.Config{Band: st.band / 100, Target: st.target / 100, MaxMoves: f.maxMoves, Exclude: exclude})
	if err := writePlan(out.stdout, plan, st.band, st.target); err != nil {
		return err
	}
	if f.jsonOut != "" {
		if err := writePlanFiles(f.jsonOut, plan); err != nil {
			return err
		}
	}
	if !f.execute || len(plan.Moves) == 0 {
		return nil
	}
	return executeReliefPlan(ctx, reliefExecution{link: link, adm: adm, flags: f, settings: st, getenv: getenv, out: out}, plan)
}

// parseReliefFlags parses relief plan's command line; flag.ErrHelp for
// -h, a usageError for anything else wrong.
func parseReliefFlags(args []string, out streams) (reliefFlags, error) {
	var f reliefFlags
	fs := flag.NewFlagSet("relief plan", flag.ContinueOnError)
	fs.SetOutput(out.stderr)
	fs.Usage = func() { fmt.Fprint(out.stderr, reliefUsage); fs.PrintDefaults() }
	f.kf.register(fs)
	fs.StringVar(&f.config, "config", "", "the guard's configuration file: its kafka section, and its enforcer profile for the default --band")
	fs.Float64Var(&f.band, "band", 0, "relieve brokers at or above this usage, percent (default: the profile's first band that purges unexpired data; 85 without --config)")
	fs.Float64Var(&f.target, "target", 0, "move until a relieved broker is at or under this usage, and never fill a destination past it, percent (default: --band minus 10)")
	fs.Var(bytesFlag{&f.capacity}, "capacity-bytes", "every broker's capacity; usage is then the bytes of its partitions (default: DescribeLogDirs total and usable bytes)")
	fs.IntVar(&f.maxMoves, "max-moves", 0, "at most this many replica moves (0: no bound)")
	fs.StringVar(&f.exclude, "exclude-topics", "", "comma-separated topics never moved (internal topics, __*, never are)")
	fs.BoolVar(&f.execute, "execute", false, "run the plan (AlterPartitionReassignments with a replication throttle) and wait until it is done")
	fs.Var(bytesFlag{&f.throttle}, "throttle", "with --execute: the replication throttle, bytes per second on each broker (default 50MiB)")
	fs.DurationVar(&f.timeout, "timeout", time.Hour, "time allowed for the whole command (with --execute: the reassignment included)")
	fs.StringVar(&f.jsonOut, "reassignment-json-file", "", "also write the reassignment JSON to this file (and the rollback JSON next to it, .rollback.json)")
	if err := rejectPasswordFlag(args); err != nil {
		return f, err
	}
	if err := parseFlags(fs, args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, usageError{fmt.Sprintf("relief plan: unexpected argument %q", fs.Arg(0))}
	}
	return f, nil
}

// reliefSettings are relief plan's flags resolved against --config and
// the environment.
type reliefSettings struct {
	band, target float64 // percent
	kafka        kafkaadmin.Config
	enforcer     enforcer.Config
}

// settings resolves the band, the target and the connection (--config,
// then the flags and KDG_* variables), checks them and defaults
// --throttle; every error is a usageError.
func (f *reliefFlags) settings(getenv env) (reliefSettings, error) {
	var st reliefSettings
	var base kafkaadmin.Config
	st.band = 85.0
	if f.config != "" {
		c, err := loadConfigFile(f.config)
		if err != nil {
			return st, usageError{err.Error()}
		}
		base, st.enforcer = c.Kafka, c.Enforcer
		if b, ok := firstPurgeBand(c.Enforcer); ok {
			st.band = 100 * b
		}
	}
	if f.band != 0 {
		st.band = f.band
	}
	st.target = st.band - 10
	if f.target != 0 {
		st.target = f.target
	}
	switch {
	case st.band <= 0 || st.band > 100:
		return st, usageError{fmt.Sprintf("relief plan: --band %v is not a percentage in (0, 100]", st.band)}
	case st.target <= 0 || st.target > st.band:
		return st, usageError{fmt.Sprintf("relief plan: --target %v must be in (0, --band %v]", st.target, st.band)}
	case f.maxMoves < 0:
		return st, usageError{"relief plan: --max-moves must be >= 0"}
	case f.throttle < 0:
		return st, usageError{"relief plan: --throttle must be > 0"}
	}
	if f.throttle == 0 {
		f.throttle = 50 << 20
	}
	cfg, err := f.kf.apply(base, getenv)
	if err != nil {
		return st, usageError{err.Error()}
	}
	if err := cfg.Validate(); err != nil {
		if f.config == "" {
			err = flagName(err)
		}
		return st, usageError{err.Error()}
	}
	if !cfg.Enabled() {
		return st, usageError{"relief plan: no cluster given (--bootstrap-server, KDG_BOOTSTRAP_SERVERS or --config)"}
	}
	st.kafka = cfg
	return st, nil
}

// reliefExecution is what relief plan --execute runs with.
type reliefExecution struct {
	link     *kafkaadmin.Link
	adm      *kafkaadmin.Relief
	flags    reliefFlags
	settings reliefSettings
	getenv   env
	out      streams
}

// executeReliefPlan runs the plan under a throttle claimed in the
// ownership topic and waits until it is done; interrupted, it prints how
// to remove the throttle.
func executeReliefPlan(ctx context.Context, x reliefExecution, plan relief.Plan) error {
	out, ecfg := x.out, x.settings.enforcer
	fmt.Fprintf(out.stdout, "\nexecuting %d moves, throttled at %s/s per broker\n", len(plan.Moves), human.Bytes(x.flags.throttle))
	last := -1
	own := enforcer.DefaultOwnershipTopic
	if ecfg.OwnershipTopic != "" {
		own = ecfg.OwnershipTopic
	}
	store := x.link.Enforce(own)
	if err := store.Prepare(ctx); err != nil {
		return fmt.Errorf("relief plan --execute: the ownership topic %s: %w", own, err)
	}
	host, _ := os.Hostname()
	claim := &kafkaadmin.ExecuteClaim{Store: store, Owner: "cli-" + claimName(host), Instance: fmt.Sprintf("%s pid %d", operatorName(x.getenv), os.Getpid()),
		Lease: ecfg.WithDefaults().Protection.LeaseDuration}
	err := x.adm.Execute(ctx, plan, kafkaadmin.ExecuteOptions{ThrottleBytesPerSecond: x.flags.throttle, Claim: claim, Progress: func(n int) {
		if n != last {
			fmt.Fprintf(out.stdout, "  %d of %d moves in progress\n", n, len(plan.Moves))
			last = n
		}
	}})
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(out.stderr, "\nThe reassignment goes on in Kafka, throttled. Once it is done (kafka-reassign-partitions.sh --verify with the JSON above reports it complete, and removes the throttle), or to remove the throttle now:\n")
			for _, c := range kafkaadmin.ThrottleCommands(plan, strings.Join(x.settings.kafka.BootstrapServers, ",")) {
				fmt.Fprintln(out.stderr, "  "+c)
			}
			fmt.Fprintf(out.stderr, "The throttle is claimed in the ownership topic %s as %s: a guard agent removes it once the moves are done and the claim's lease (%s) has passed; \"kafka-disk-guard protection lift --all\" removes it now and gives the claim up.\n",
				own, ledger.ReassignKey(claim.Owner), claim.Lease)
		}
		return fmt.Errorf("relief plan --execute: %w", err)
	}
	fmt.Fprintln(out.stdout, "done: every replica moved, replication throttle removed")
	return nil
}

// firstPurgeBand is the lower bound of the profile's first band that
// deletes unexpired data (purge, purge_fraction), or of its protect band.
func firstPurgeBand(cfg enforcer.Config) (float64, bool) {
	p, err := enforcer.ProfileFor(cfg)
	if err != nil {
		return 0, false
	}
	for _, b := range p.Bands {
		if b.Action == enforcer.ActionPurge || b.Action == enforcer.ActionPurgeFraction || b.Action == enforcer.ActionProtect {
			return b.From, true
		}
	}
	return 0, false
}

func writePlan(w io.Writer, p relief.Plan, band, target float64) error {
	fmt.Fprintf(w, "relief plan: brokers at or above %.4g%% give up replicas until at or under %.4g%%\n\n", band, target)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BROKER\tRACK\tCAPACITY\tUSED NOW\tUSAGE NOW\tUSED AFTER\tUSAGE AFTER")
	for i, b := range p.Before {
		a := p.After[i]
		if b.CapacityBytes <= 0 {
			fmt.Fprintf(tw, "%d\t%s\tunknown\t%s\t-\t%s\t-\n", b.ID, rackText(b.Rack), human.Bytes(b.UsedBytes), human.Bytes(a.UsedBytes))
			continue
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%.1f%%\t%s\t%.1f%%\n", b.ID, rackText(b.Rack), human.Bytes(b.CapacityBytes),
			human.Bytes(b.UsedBytes), 100*b.Ratio(), human.Bytes(a.UsedBytes), 100*a.Ratio())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(p.Moves) == 0 {
		fmt.Fprintln(w, "\nno moves")
	} else {
		fmt.Fprintf(w, "\n%d moves:\n", len(p.Moves))
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tPARTITION\tFROM\tTO\tBYTES\tREPLICAS\tNEW REPLICAS")
		for _, m := range p.Moves {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%v\t%v\n", m.Topic, m.Partition, m.From, m.To, human.Bytes(m.Bytes), m.Replicas, m.NewReplicas)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, id := range p.Unrelieved {
		fmt.Fprintf(w, "broker %d stays over %.4g%%: %s\n", id, target, p.Why[id])
	}
	if len(p.Moves) == 0 {
		return nil
	}
	js, back, err := planJSON(p)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nreassignment (kafka-reassign-partitions.sh --reassignment-json-file):\n%s\n", js)
	fmt.Fprintf(w, "\nrollback (the current assignment):\n%s\n", back)
	return nil
}

// planJSON is the plan's reassignment and its rollback (the current
// assignment), as kafka-reassign-partitions.sh reads them.
func planJSON(p relief.Plan) (reassign, rollback []byte, err error) {
	if reassign, err = p.ReassignmentJSON(false); err != nil {
		return nil, nil, err
	}
	if rollback, err = p.ReassignmentJSON(true); err != nil {
		return nil, nil, err
	}
	return reassign, rollback, nil
}

func writePlanFiles(path string, p relief.Plan) error {
	js, back, err := planJSON(p)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("write reassignment json: %w", err)
	}
	rb := strings.TrimSuffix(path, ".json") + ".rollback.json"
	if err := os.WriteFile(rb, append(back, '\n'), 0o644); err != nil {
		return fmt.Errorf("write rollback json: %w", err)
	}
	return nil
}

func rackText(r string) string {
	if r == "" {
		return "-"
	}
	return r
}

// claimName is host as a key part (letters, digits, '.', '-', '_').
func claimName(host string) string {
	if host == "" {
		return "unknown-host"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, host)
}

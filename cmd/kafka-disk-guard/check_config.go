package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

const checkConfigUsage = `usage: kafka-disk-guard check-config [--online [connection flags]] FILE...

Loads and validates configuration files as run does, without starting
anything. With --online it also connects to each file's cluster (the
connection flags and KDG_* variables override the file's kafka section, as
for run), checks that the principal holds every right the enabled features
need and names each one missing, and reads what admission needs: brokers,
topics, their configs and log dirs. Exit 0: valid (and reachable, with the
rights); 1: a file fails; 2: usage.

flags:
`

// runCheckConfig loads and validates configuration files the way `run`
// does, without starting anything: for CI, Helm charts and config
// management. A file that fails the check exits 1; a mistake in the
// command line exits 2.
func runCheckConfig(ctx context.Context, args []string, getenv env, out streams) error {
	if err := rejectPasswordFlag(args); err != nil {
		return err
	}
	fs := flag.NewFlagSet("check-config", flag.ContinueOnError)
	fs.SetOutput(out.stderr)
	fs.Usage = func() { fmt.Fprint(out.stderr, checkConfigUsage); fs.PrintDefaults() }
	online := fs.Bool("online", false, "also connect to the cluster, check the principal's rights and read the cluster as admission does")
	timeout := fs.Duration("timeout", 30*time.Second, "with --online: time allowed to read the cluster")
	var kf kafkaFlags
	kf.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err.Error()}
	}
	if fs.NArg() == 0 {
		return usageError{"usage: kafka-disk-guard check-config [--online] FILE..."}
	}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	for _, path := range fs.Args() {
		c, err := loadConfigFile(path)
		if err == nil && *online {
			c.Kafka, err = kf.apply(c.Kafka, getenv)
		}
		if err == nil {
			err = c.Validate()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		c = c.WithDefaults()
		mode := "observe (dry run)"
		if c.Enforcer.Enabled {
			mode = "enforcing, profile " + c.Enforcer.Profile
		}
		fmt.Fprintf(out.stdout, "%s: ok: %d log dir(s), %s\n", path, len(c.LogDirs), mode)
		if !*online {
			continue
		}
		if !c.Kafka.Enabled() {
			return fmt.Errorf("%s: --online: no cluster configured (kafka.bootstrapServers)", path)
		}
		link := kafkaadmin.NewLink(c.Kafka, slog.New(slog.DiscardHandler), kafkaadmin.LinkOptions{})
		err = link.Connect()
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, *timeout)
			rightsErr := checkRights(rctx, out, path, c, link.Evidence())
			info, rerr := link.ClusterReader().ReadCluster(rctx)
			if rerr == nil {
				var ids []int32
				for _, b := range info.Brokers {
					ids = append(ids, b.ID)
				}
				if cc := c.Enforcer.Relief.Cordon; cc.Enabled == nil || *cc.Enabled {
					checkCordon(rctx, out, path, link.Enforce(c.Enforcer.OwnershipTopic), ids)
				}
			}
			cancel()
			link.Close()
			if rerr == nil {
				fmt.Fprintf(out.stdout, "%s: cluster ok: %d broker(s), %d topic(s) read with their configs and log dirs\n",
					path, len(info.Brokers), len(info.Topics))
			} else {
				rerr = fmt.Errorf("read cluster: %w", rerr)
			}
			if err = errors.Join(rightsErr, rerr); err == nil {
				continue
			}
		}
		return fmt.Errorf("%s: --online: %w", path, err)
	}
	return nil
}

// checkRights checks that the principal holds every right the features
// the configuration enables need (rights.Needs), on the topics of the
// cluster and of the log dirs, and prints the report. Missing rights fail
// the check, except, in observe mode, those only enforcement needs.
func checkRights(ctx context.Context, out streams, path string, c guardConfig, ev *kafkaadmin.Evidence) error {
	features, err := enforcer.Features(c.Enforcer)
	if err != nil {
		return err
	}
	if c.Admission.IsEnabled() {
		features = append(features, rights.Admission)
	}
	topics := agent.ListLiveTopics(c.LogDirs)
	if names, err := ev.TopicNames(ctx); err == nil {
		topics = append(topics, names...)
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	r, err := ev.Rights(ctx, rights.Query{Features: features, Topics: topics, OwnershipTopic: c.Enforcer.OwnershipTopic})
	if err != nil {
		return fmt.Errorf("check rights: %w", err)
	}
	names := make([]string, len(features))
	for i, f := range features {
		names[i] = string(f)
	}
	if r.OK() {
		fmt.Fprintf(out.stdout, "%s: rights ok: %s (%d topic(s) checked)\n", path, strings.Join(names, ", "), r.Checked)
		return nil
	}
	fmt.Fprintf(out.stdout, "%s: rights missing (features %s, %d topic(s) checked):\n", path, strings.Join(names, ", "), r.Checked)
	fatal := false
	for _, g := range r.Gaps {
		note := ""
		if !c.Enforcer.Enabled && g.Feature != rights.Observe && g.Feature != rights.Admission {
			note = " (needed once enforcement is on)"
		} else {
			fatal = true
		}
		fmt.Fprintf(out.stdout, "  %s%s\n", g, note)
	}
	if fatal {
		return errors.New("the guard's principal lacks rights the configuration needs (docs/operating.md#the-guards-rights)")
	}
	return nil
}

// checkCordon reports whether the brokers can cordon a log dir
// (cordoned.log.dirs, KIP-1066: metadata.version 4.3-IV0 or later) when
// enforcer.relief.cordon is on (the caller checks). A cluster that cannot
// is reported, never failed: the guard then only reports what it would
// cordon.
func checkCordon(ctx context.Context, out streams, path string, a enforcer.CordonAdmin, brokers []int32) {
	for _, id := range brokers {
		st, err := a.LogDirCordons(ctx, id)
		switch {
		case err != nil:
			fmt.Fprintf(out.stdout, "%s: cordon: broker %d: cordoned.log.dirs not read: %v\n", path, id, err)
		case !st.Supported():
			fmt.Fprintf(out.stdout, "%s: cordon: not supported: metadata.version feature level %d < %d (4.3-IV0); log dirs are not cordoned, kafka_disk_guard_cordon_supported reads 0\n",
				path, st.MetadataVersion, enforcer.CordonMinMetadataVersion)
			return
		default:
			fmt.Fprintf(out.stdout, "%s: cordon: broker %d: ok (metadata.version feature level %d), %d log dir(s), cordoned now: %v\n",
				path, id, st.MetadataVersion, len(st.LogDirs), append(st.Dynamic, st.Inherited...))
		}
	}
}

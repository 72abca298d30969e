package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
)

const checkConfigUsage = `usage: kafka-disk-guard check-config [--online [connection flags]] FILE...

Loads and validates configuration files as run does, without starting
anything. With --online it also connects to each file's cluster (the
connection flags and KDG_* variables override the file's kafka section, as
for run) and reads what admission needs: brokers, topics, their configs and
log dirs. Exit 0: valid (and reachable); 1: a file fails; 2: usage.

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
	online := fs.Bool("online", false, "also connect to the cluster and read it as admission does")
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
			info, rerr := link.ClusterReader().ReadCluster(rctx)
			cancel()
			link.Close()
			if rerr == nil {
				fmt.Fprintf(out.stdout, "%s: cluster ok: %d broker(s), %d topic(s) read with their configs and log dirs\n",
					path, len(info.Brokers), len(info.Topics))
				continue
			}
			err = fmt.Errorf("read cluster: %w", rerr)
		}
		return fmt.Errorf("%s: --online: %w", path, err)
	}
	return nil
}

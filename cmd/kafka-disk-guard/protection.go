package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
)

const protectionUsage = `usage: kafka-disk-guard protection <status|lift|resume> [flags]

Write protection as the guard's ownership records and the cluster hold it
(spec R8):

  status   every protection in place, who set it, why, since when and its
           lease; bindings that look like the guard's but that no record
           claims ("unattributed": for an operator to decide, never lifted
           by the guard)
  lift     lift protection safely: --broker N (one agent's), --topic T (one
           topic in every agent's record) or --all; recorded as an
           operator's lift, which the agents acknowledge and honour until
           their disk calms down (or until resume)
  resume   withdraw an operator's lift (--broker N or --all): the agents
           may protect again at once

Connection: the flags below and KDG_* variables, or --config with the
guard's configuration file (its kafka section and enforcer.ownershipTopic;
flags and variables override it). Exit 0: done; 1: the cluster could not
be read or changed; 2: usage.

flags:
`

// protectionFlags are the flags every protection subcommand takes.
type protectionFlags struct {
	fs       *flag.FlagSet
	kf       kafkaFlags
	config   string
	topic    string
	timeout  time.Duration
	getenv   env
	commandN string
}

func newProtectionFlags(name string, getenv env, stderr io.Writer) *protectionFlags {
	p := &protectionFlags{fs: flag.NewFlagSet("protection "+name, flag.ContinueOnError), getenv: getenv, commandN: name}
	p.fs.SetOutput(stderr)
	p.fs.Usage = func() { fmt.Fprint(stderr, protectionUsage); p.fs.PrintDefaults() }
	p.kf.register(p.fs)
	p.fs.StringVar(&p.config, "config", "", "the guard's configuration file: its kafka section and enforcer.ownershipTopic")
	p.fs.StringVar(&p.topic, "ownership-topic", "", "the ownership topic (default: the config file's enforcer.ownershipTopic, else "+enforcer.DefaultOwnershipTopic+")")
	p.fs.DurationVar(&p.timeout, "timeout", 60*time.Second, "time allowed for the whole command")
	return p
}

// parse parses args; a usage error says what is wrong.
func (p *protectionFlags) parse(args []string) error {
	if err := rejectPasswordFlag(args); err != nil {
		return err
	}
	if err := parseFlags(p.fs, args); err != nil {
		return err
	}
	if p.fs.NArg() > 0 {
		return usageError{fmt.Sprintf("protection %s: unexpected argument %q", p.commandN, p.fs.Arg(0))}
	}
	return nil
}

// open parses args, runs check (the subcommand's own usage checks),
// connects, and bounds the rest by --timeout; done releases it all. admin
// is nil when nothing is to be done: err says why, nil after -h.
func (p *protectionFlags) open(ctx context.Context, args []string, check func() error) (admin *kafkaadmin.Enforce, cctx context.Context, done func(), err error) {
	if err := p.parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, nil, nil
		}
		return nil, nil, nil, err
	}
	if check != nil {
		if err := check(); err != nil {
			return nil, nil, nil, err
		}
	}
	admin, closeFn, err := p.connect()
	if err != nil {
		return nil, nil, nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	return admin, cctx, func() { cancel(); closeFn() }, nil
}

// connect opens the admin API on the ownership topic; close releases it.
func (p *protectionFlags) connect() (admin *kafkaadmin.Enforce, closeFn func(), err error) {
	var base kafkaadmin.Config
	topic := enforcer.DefaultOwnershipTopic
	if p.config != "" {
		c, err := loadConfigFile(p.config)
		if err != nil {
			return nil, nil, usageError{err.Error()}
		}
		base = c.Kafka
		if c.Enforcer.OwnershipTopic != "" {
			topic = c.Enforcer.OwnershipTopic
		}
	}
	if p.topic != "" {
		topic = p.topic
	}
	cfg, err := p.kf.apply(base, p.getenv)
	if err != nil {
		return nil, nil, usageError{err.Error()}
	}
	if err := cfg.Validate(); err != nil {
		if p.config == "" {
			err = flagName(err)
		}
		return nil, nil, usageError{err.Error()}
	}
	if !cfg.Enabled() {
		return nil, nil, usageError{"protection " + p.commandN + ": no cluster given (--bootstrap-server, KDG_BOOTSTRAP_SERVERS or --config)"}
	}
	if err := (enforcer.Config{OwnershipTopic: topic}).Validate(); err != nil {
		return nil, nil, usageError{strings.Replace(err.Error(), "enforcer.ownershipTopic", "--ownership-topic", 1)}
	}
	link := kafkaadmin.NewLink(cfg, slog.New(slog.DiscardHandler), kafkaadmin.LinkOptions{})
	if err := link.Connect(); err != nil {
		return nil, nil, err
	}
	return link.Enforce(topic), func() { link.Close() }, nil
}

func runProtection(ctx context.Context, args []string, getenv env, out streams) error {
	return subcommands{"protection", protectionUsage, []namedSubcommand{
		{"status", runProtectionStatus}, {"lift", runProtectionLift}, {"resume", runProtectionResume},
	}}.run(ctx, args, getenv, out)
}

// subcommands is a command made of subcommands: its name, its usage text
// and what runs each subcommand.
type subcommands struct {
	name, usage string
	cmds        []namedSubcommand
}

// namedSubcommand is one subcommand and what runs it with its own
// arguments.
type namedSubcommand struct {
	name string
	run  func(ctx context.Context, args []string, getenv env, out streams) error
}

// run dispatches args[0] among the command's subcommands: help (or
// nothing: a usage error) prints usage, an unknown name is a usage error
// listing the known ones.
func (sc subcommands) run(ctx context.Context, args []string, getenv env, out streams) error {
	name, usage, cmds := sc.name, sc.usage, sc.cmds
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	known := strings.Join(names, ", ")
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(out.stderr, usage)
		if len(args) == 0 {
			return usageError{fmt.Sprintf("%s: no subcommand given (%s)", name, known)}
		}
		return nil
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return c.run(ctx, args[1:], getenv, out)
		}
	}
	return usageError{fmt.Sprintf("%s: unknown subcommand %q (%s)", name, args[0], known)}
}

// operatorName names who runs the command, for the lift's record.
func operatorName(getenv env) string {
	user := getenv("USER")
	if user == "" {
		user = getenv("LOGNAME")
	}
	if user == "" {
		user = "uid-" + strconv.Itoa(os.Getuid())
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return "operator " + user + "@" + host
}

// brokerScope reads --broker and --all: exactly one, or (with topicOK) a
// topic instead.
type brokerScope struct {
	broker int
	all    bool
	topic  string
}

func (s *brokerScope) register(fs *flag.FlagSet, topicOK bool) {
	fs.IntVar(&s.broker, "broker", -1, "the broker id whose agent's protection to act on")
	fs.BoolVar(&s.all, "all", false, "every agent's protection")
	if topicOK {
		fs.StringVar(&s.topic, "topic", "", "one topic, in every agent's record")
	}
}

func (s *brokerScope) check(cmd string, topicOK bool) error {
	n := 0
	if s.broker >= 0 {
		n++
	}
	if s.all {
		n++
	}
	if s.topic != "" {
		n++
	}
	if n != 1 {
		if topicOK {
			return usageError{"protection " + cmd + ": give exactly one of --broker N, --topic T, --all"}
		}
		return usageError{"protection " + cmd + ": give exactly one of --broker N, --all"}
	}
	if s.broker > 1<<31-1 {
		return usageError{fmt.Sprintf("protection %s: --broker %d is not a broker id", cmd, s.broker)}
	}
	return nil
}

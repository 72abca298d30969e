package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"
)

// env is how subcommands read environment variables (os.Getenv in main,
// a map in tests).
type env func(string) string

// streams are a subcommand's outputs.
type streams struct {
	stdout io.Writer
	stderr io.Writer
}

// command is one subcommand. Each lives in a file of its own.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, getenv env, out streams) error
}

// usageError is a mistake in the command line or the configuration,
// found before anything was done; main exits 2 for it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitCode is the one convention of every subcommand: 0 success, 2 a
// usage error (unknown flag, bad flag value, invalid configuration:
// nothing was started), 1 a failure while doing the work (a cluster that
// cannot be read, an address in use, a refused reservation, a
// configuration file that fails check-config).
func exitCode(err error) int {
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

func commands() map[string]command {
	return map[string]command{
		"version":      {summary: "print the version", run: runVersion},
		"run":          {summary: "run the guard next to a broker: watch, export metrics, enforce", run: runGuard},
		"check-config": {summary: "validate configuration files without starting", run: runCheckConfig},
		"scan":         {summary: "read log dirs once and report every segment's retention state", run: runScan},
		"demo":         {summary: "generate a live broker log dir (or watch a real broker) and serve its metrics", run: runDemo},
		"reserve":      {summary: "reserved-space calculator and admission what-if (spec R5)", run: runReserve},
	}
}

func run(ctx context.Context, args []string, getenv env, stdout, stderr io.Writer) error {
	cmds := commands()
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stdout, cmds)
		if len(args) == 0 {
			return usageError{"no subcommand given"}
		}
		return nil
	}
	c, ok := cmds[args[0]]
	if !ok {
		printUsage(stderr, cmds)
		return usageError{fmt.Sprintf("unknown subcommand %q", args[0])}
	}
	return c.run(ctx, args[1:], getenv, streams{stdout: stdout, stderr: stderr})
}

func printUsage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("usage: kafka-disk-guard <subcommand> [flags]\n\nsubcommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, cmds[n].summary)
	}
	b.WriteString("\nRun 'kafka-disk-guard <subcommand> -h' for its flags.\n")
	io.WriteString(w, b.String())
}

// version is set with -ldflags "-X main.version=..." by release builds;
// otherwise it comes from the module build info.
var version = ""

func buildVersion() (ver, revision string) {
	ver = version
	if bi, ok := debug.ReadBuildInfo(); ok {
		if ver == "" {
			ver = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	if ver == "" {
		ver = "(devel)"
	}
	return ver, revision
}

func runVersion(_ context.Context, args []string, _ env, out streams) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("version: unexpected argument %q", args[0])}
	}
	v, rev := buildVersion()
	fmt.Fprintf(out.stdout, "kafka-disk-guard %s %s\n", v, rev)
	return nil
}

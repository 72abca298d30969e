package main

import (
	"context"
	"errors"
	"flag"
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

// parseFlags parses a subcommand's arguments: -h (or --help) returns
// flag.ErrHelp, any other error (an unknown flag, a bad value) a
// usageError.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err.Error()}
}

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
		"protection":   {summary: "write protection in place (status), lift it as an operator (lift, resume)", run: runProtection},
		"relief":       {summary: "plan (and with --execute run) moving replicas off brokers in a band onto brokers with room", run: runRelief},
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

// version and revision are stamped by release builds
// (scripts/build-image.sh):
//
//	-ldflags "-X main.version=0.1.0 -X main.revision=<git commit>"
//
// The version comes from the chart's appVersion (one place for both).
// Unstamped builds fall back to the module build info: the module version
// (or "(devel)") and the VCS revision Go records in a git checkout, with
// "-dirty" for uncommitted changes. A build without VCS data (a source
// tarball, -buildvcs=false) says "unknown", never an empty revision.
var (
	version  = ""
	revision = ""
)

func buildVersion() (ver, rev string) {
	bi, _ := debug.ReadBuildInfo()
	return stamped(version, revision, bi)
}

// stamped picks the version and revision from the -X values, else from
// the build info (nil when there is none).
func stamped(ldVersion, ldRevision string, bi *debug.BuildInfo) (ver, rev string) {
	ver, rev = ldVersion, ldRevision
	if bi != nil {
		if ver == "" && bi.Main.Version != "" {
			ver = bi.Main.Version
		}
		if rev == "" {
			var modified bool
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value == "true"
				}
			}
			if rev != "" && modified {
				rev += "-dirty"
			}
		}
	}
	if ver == "" {
		ver = "(devel)"
	}
	if rev == "" {
		rev = "unknown"
	}
	return ver, rev
}

func runVersion(_ context.Context, args []string, _ env, out streams) error {
	if len(args) > 0 {
		return usageError{fmt.Sprintf("version: unexpected argument %q", args[0])}
	}
	v, rev := buildVersion()
	fmt.Fprintf(out.stdout, "kafka-disk-guard %s %s\n", v, rev)
	return nil
}

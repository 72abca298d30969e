package main

import (
	"context"
	"fmt"
	"strings"
)

// runCheckConfig loads and validates configuration files the way `run`
// does, without starting anything: for CI, Helm charts and config
// management. A file that fails the check exits 1; a mistake in the
// command line exits 2.
func runCheckConfig(_ context.Context, args []string, _ env, out streams) error {
	if len(args) == 0 {
		return usageError{"usage: kafka-disk-guard check-config FILE..."}
	}
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fmt.Fprintln(out.stdout, "usage: kafka-disk-guard check-config FILE...")
			return nil
		}
		if strings.HasPrefix(a, "-") {
			return usageError{fmt.Sprintf("check-config: unknown flag %s (usage: kafka-disk-guard check-config FILE...)", a)}
		}
	}
	for _, path := range args {
		c, err := loadConfigFile(path)
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
	}
	return nil
}

package main

import (
	"context"
	"fmt"
)

// runCheckConfig loads and validates configuration files the way `run`
// does, without starting anything: for CI, Helm charts and config
// management.
func runCheckConfig(_ context.Context, args []string, _ env, out streams) error {
	if len(args) == 0 {
		return usageError{"usage: kafka-disk-guard check-config FILE..."}
	}
	for _, path := range args {
		c, err := loadConfigFile(path)
		if err == nil {
			err = c.validate()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		mode := "observe (dry run)"
		if c.Enforcer.Enabled {
			mode = "enforcing, profile " + c.Enforcer.Profile
		}
		fmt.Fprintf(out.stdout, "%s: ok: %d log dir(s), %s\n", path, len(c.LogDirs), mode)
	}
	return nil
}

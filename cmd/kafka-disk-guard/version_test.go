package main

import (
	"runtime/debug"
	"testing"
)

func TestStampedVersion(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
		if rev != "" {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.revision", Value: rev})
		}
		if modified != "" {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: "vcs.modified", Value: modified})
		}
		return bi
	}
	for _, tc := range []struct {
		name                 string
		ldVersion, ldRev     string
		bi                   *debug.BuildInfo
		wantVersion, wantRev string
	}{
		{"release build: -X wins over build info", "0.1.0", "2fe51ab", vcs("ffff", "true"), "0.1.0", "2fe51ab"},
		{"go build in a clean checkout", "", "", vcs("2fe51ab", "false"), "(devel)", "2fe51ab"},
		{"go build with uncommitted changes", "", "", vcs("2fe51ab", "true"), "(devel)", "2fe51ab-dirty"},
		{"go install of a tagged module", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "v0.1.0", "unknown"},
		{"no VCS data: revision unknown, never empty", "", "", vcs("", ""), "(devel)", "unknown"},
		{"no build info at all", "", "", nil, "(devel)", "unknown"},
		{"version stamped, revision from VCS", "0.1.0", "", vcs("2fe51ab", "false"), "0.1.0", "2fe51ab"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, r := stamped(tc.ldVersion, tc.ldRev, tc.bi)
			if v != tc.wantVersion || r != tc.wantRev {
				t.Fatalf("stamped = %q %q, want %q %q", v, r, tc.wantVersion, tc.wantRev)
			}
		})
	}
}

package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reserve subcommand's reports, offline (spec R5.1-R5.4).
func TestReserveGolden(t *testing.T) {
	seed := []string{"--config", "retention.bytes=1073741824", "--config", "segment.bytes=536870912"}
	tests := []struct {
		name     string
		args     []string
		wantErr  string // substring; "" for success
		usageErr bool
	}{
		{"seed_1g_512m", append([]string{"--topic", "orders", "--partitions", "1", "--storage-bytes", "100GiB"}, seed...), "", false},
		{"seed_50g_512m", []string{"--topic", "archive", "--partitions", "1", "--storage-bytes", "100GiB",
			"--config", "retention.bytes=53687091200", "--config", "segment.bytes=536870912"}, "", false},
		{"seed_1g_128m", []string{"--topic", "small-segments", "--partitions", "1", "--storage-bytes", "100GiB",
			"--config", "retention.bytes=1073741824", "--config", "segment.bytes=134217728"}, "", false},
		{"compact", []string{"--topic", "changelog", "--partitions", "6", "--replication-factor", "3", "--storage-bytes", "100GiB",
			"--reserved-bytes", "20GiB", "--config", "cleanup.policy=compact", "--config", "retention.bytes=53687091200"}, "", false},
		{"compact_flat_configured", []string{"--topic", "changelog", "--partitions", "6", "--storage-bytes", "100GiB",
			"--compact-flat-bytes", "256MiB", "--config", "cleanup.policy=compact"}, "", false},
		{"unbounded", []string{"--topic", "forever", "--partitions", "2", "--storage-bytes", "100GiB", "--config", "retention.bytes=-1"}, "", false},
		{"unbounded_rate", []string{"--topic", "forever", "--partitions", "2", "--storage-bytes", "100GiB", "--config", "retention.bytes=-1",
			"--config", "retention.ms=86400000", "--write-rate-bytes", "10240"}, "", false},
		{"refused", append([]string{"--topic", "orders", "--partitions", "12", "--replication-factor", "3", "--storage-bytes", "100GiB", "--reserved-bytes", "40GiB"}, seed...),
			"PolicyViolation: reserved storage limit of 90% exceeded: cluster would be at 96.1% (current 40.00 GiB = 40%, requested 56.11 GiB, storage 100.00 GiB)", false},
		{"refused_limit_80", append([]string{"--topic", "orders", "--partitions", "10", "--replication-factor", "3", "--storage-bytes", "100GiB", "--reserved-bytes", "40GiB", "--limit-percent", "80"}, seed...),
			"PolicyViolation: reserved storage limit of 80% exceeded", false},
		{"add_partitions", append([]string{"--topic", "orders", "--add-partitions", "--partitions", "8", "--current-partitions", "6", "--replication-factor", "3",
			"--storage-bytes", "100GiB", "--reserved-bytes", "80GiB"}, seed...), "", false},
		{"add_partitions_refused", append([]string{"--topic", "orders", "--add-partitions", "--partitions", "12", "--current-partitions", "6", "--replication-factor", "3",
			"--storage-bytes", "100GiB", "--reserved-bytes", "80GiB"}, seed...), "PolicyViolation: reserved storage limit of 90% exceeded: cluster would be at 108.1%", false},
		{"json", append([]string{"--topic", "orders", "--partitions", "2", "--storage-bytes", "10GiB", "--reserved-bytes", "1GiB", "--output", "json"}, seed...), "", false},
		{"no_figures", []string{"--topic", "orders"}, "give --bootstrap-server", true},
		{"no_topic", []string{"--storage-bytes", "1GiB"}, "--topic is required", true},
		{"bad_config", []string{"--topic", "t", "--storage-bytes", "1GiB", "--config", "retention.bytes=1GiB"}, `retention.bytes="1GiB": not an integer`, true},
		{"add_without_current", []string{"--topic", "t", "--storage-bytes", "1GiB", "--add-partitions", "--partitions", "3"}, "needs --current-partitions", true},
		{"bad_limit", []string{"--topic", "t", "--storage-bytes", "1GiB", "--limit-percent", "150"}, "--limit-percent: 150 is outside (0, 100]", true},
		{"bad_sasl", []string{"--topic", "t", "--bootstrap-server", "127.0.0.1:1", "--sasl-mechanism", "GSSAPI", "--sasl-username", "u"}, "--sasl-mechanism: \"GSSAPI\" is not PLAIN", true},
		{"sasl_without_user", []string{"--topic", "t", "--bootstrap-server", "127.0.0.1:1", "--sasl-mechanism", "PLAIN"}, "--sasl-username: required", true},
		{"password_flag", []string{"--topic", "t", "--bootstrap-server", "127.0.0.1:1", "--sasl-password", "x"}, "a password on the command line shows in ps", true},
		{"offline_and_online", []string{"--topic", "t", "--bootstrap-server", "127.0.0.1:1", "--storage-bytes", "1GiB"}, "offline figures", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append([]string{"reserve"}, tt.args...), func(string) string { return "" }, &stdout, &stderr)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("error %v\n%s", err, stderr.String())
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				var ue usageError
				if errors.As(err, &ue) != tt.usageErr {
					t.Fatalf("usage error = %v, want %v (%v)", !tt.usageErr, tt.usageErr, err)
				}
				if tt.usageErr {
					return
				}
			}
			golden := filepath.Join("testdata", "reserve", tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got := stdout.String(); got != string(want) {
				t.Fatalf("output differs from %s:\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"1073741824", 1 << 30, false}, {"1GiB", 1 << 30, false}, {"1GB", 1 << 30, false}, {"512MiB", 512 << 20, false},
		{"1.5GiB", 3 << 29, false}, {"10 KiB", 10240, false}, {"7B", 7, false}, {"-1", 0, true}, {"lots", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseBytes(tt.in)
			if (err != nil) != tt.err || got != tt.want {
				t.Fatalf("parseBytes(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
			}
		})
	}
}

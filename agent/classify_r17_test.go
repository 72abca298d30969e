package agent

import (
	"slices"
	"testing"
	"time"
)

// tieredCfg is a tiered topic's config (remote.storage.enable=true on a
// broker whose remote log storage system is on).
func tieredCfg(retMs, retBytes, localMs, localBytes int64) TopicConfig {
	c := cfg(retMs, retBytes, "delete")
	c.RemoteStorage, c.LocalRetentionMs, c.LocalRetentionBytes = true, localMs, localBytes
	return c
}

func withRemote(p Partition, highest, localStart int64) Partition {
	p.Remote = &RemoteOffsets{HighestUploaded: highest, LocalLogStart: localStart, LogStart: 0}
	return p
}

// TestClassifyR1_7 is spec R1.7's rule table: tiered storage and the Kafka
// 4.x cases, each as Kafka 4.4's UnifiedLog/LogManager decide them.
func TestClassifyR1_7(t *testing.T) {
	const (
		O   = "open"
		C   = "closed"
		ET  = "eligible/retention_time"
		ES  = "eligible/retention_size"
		EL  = "eligible/log_start_offset"
		EA  = "eligible/all_expired_active"
		ELT = "eligible/local_retention_time"
		ELS = "eligible/local_retention_size"
	)
	h := time.Hour
	four := func(a0, a1, a2, a3, aa time.Duration) []seg {
		return []seg{{0, 100, a0}, {100, 100, a1}, {200, 100, a2}, {300, 100, a3}, {400, 50, aa}}
	}
	old := four(50*h, 40*h, 30*h, 30*h, 25*h)
	fresh := four(h, h, h, h, h)
	tests := []struct {
		name string
		p    Partition
		cfg  TopicConfig
		want []string
		tier []Tier // when set, each segment's tier
	}{
		// Tiered storage.
		{"R1.7/tiered: nothing uploaded, past local retention: kept", withRemote(mkPartition(-1, 450, 450, old...), -1, 0),
			tieredCfg(-1, -1, 24*hour, -2), []string{C, C, C, C, O}, []Tier{TierLocalOnly, TierLocalOnly, TierLocalOnly, TierLocalOnly, TierLocalOnly}},
		{"R1.7/tiered: uploaded and past local.retention.ms: eligible locally", withRemote(mkPartition(-1, 450, 450, old...), 199, 0),
			tieredCfg(-1, -1, 24*hour, -2), []string{ELT, ELT, C, C, O}, []Tier{TierUploaded, TierUploaded, TierLocalOnly, TierLocalOnly, TierLocalOnly}},
		{"R1.7/tiered: the upload boundary must cover the segment's last offset", withRemote(mkPartition(-1, 450, 450, old...), 198, 0),
			tieredCfg(-1, -1, 24*hour, -2), []string{ELT, C, C, C, O}, nil},
		{"R1.7/tiered: everything uploaded: the active segment is never eligible", withRemote(mkPartition(-1, 450, 450, old...), 399, 0),
			tieredCfg(-1, -1, 24*hour, -2), []string{ELT, ELT, ELT, ELT, O}, nil},
		{"R1.7/tiered: upload state unknown: nothing is eligible", mkPartition(-1, 450, 450, old...),
			tieredCfg(-1, -1, 24*hour, -2), []string{C, C, C, C, O}, []Tier{TierUnknown, TierUnknown, TierUnknown, TierUnknown, TierUnknown}},
		{"R1.7/tiered: offsets that could not be read: nothing is eligible", func() Partition {
			p := mkPartition(300, 450, 450, old...)
			p.Remote = &RemoteOffsets{Err: "leader not available"}
			return p
		}(), tieredCfg(-1, -1, 24*hour, -2), []string{C, C, C, C, O}, nil},
		{"R1.7/tiered: local.retention.ms -2 uses retention.ms", withRemote(mkPartition(-1, 450, 450, old...), 399, 0),
			tieredCfg(35*hour, -1, -2, -2), []string{ELT, ELT, C, C, O}, nil},
		{"R1.7/tiered: local.retention.ms -1 keeps everything locally", withRemote(mkPartition(-1, 450, 450, old...), 399, 0),
			tieredCfg(24*hour, -1, -1, -2), []string{C, C, C, C, O}, nil},
		{"R1.7/tiered: local.retention.bytes applies to the local log", withRemote(mkPartition(-1, 450, 450, fresh...), 399, 0),
			tieredCfg(-1, -1, -1, 250), []string{ELS, ELS, C, C, O}, nil},
		{"R1.7/tiered: local.retention.bytes -2 uses retention.bytes", withRemote(mkPartition(-1, 450, 450, fresh...), 399, 0),
			tieredCfg(-1, 250, -1, -2), []string{ELS, ELS, C, C, O}, nil},
		{"R1.7/tiered: size stops at the upload boundary", withRemote(mkPartition(-1, 450, 450, fresh...), 99, 0),
			tieredCfg(-1, -1, -1, 0), []string{ELS, C, C, C, O}, nil},
		{"R1.7/tiered: retention.ms does not apply to the local copy", withRemote(mkPartition(-1, 450, 450, old...), 399, 0),
			tieredCfg(24*hour, -1, 100*hour, -2), []string{C, C, C, C, O}, nil},
		{"R1.7/tiered: below the log start offset goes without upload", withRemote(mkPartition(200, 450, 450, fresh...), -1, 0),
			tieredCfg(-1, -1, -1, -2), []string{EL, EL, C, C, O}, nil},
		{"R1.7/tiered: the local log start offset from the leader", withRemote(mkPartition(-1, 450, 450, fresh...), 399, 300),
			tieredCfg(-1, -1, -1, -2), []string{EL, EL, EL, C, O}, nil},
		{"R1.7/tiered: remote.log.copy.disable falls back to retention.ms, no upload needed", func() Partition {
			return mkPartition(-1, 450, 450, old...)
		}(), func() TopicConfig {
			c := tieredCfg(24*hour, -1, 100*hour, -2)
			c.RemoteCopyDisable = true
			return c
		}(), []string{ET, ET, ET, ET, EA}, nil},
		{"R1.7/tiered: broker's remote log storage system off: a local topic", mkPartition(-1, 450, 450, old...), func() TopicConfig {
			c := tieredCfg(24*hour, -1, 100*hour, -2)
			c.RemoteStorageSystemDisabled = true
			return c
		}(), []string{ET, ET, ET, ET, EA}, []Tier{TierNone, TierNone, TierNone, TierNone, TierNone}},
		{"R1.7/tiered: compact,delete is never tiered", mkPartition(-1, 450, 450, old...), func() TopicConfig {
			c := tieredCfg(24*hour, -1, 100*hour, -2)
			c.CleanupPolicy = CleanupPolicy{Compact: true, Delete: true}
			return c
		}(), []string{ET, ET, ET, ET, EA}, nil},
		// Empty cleanup.policy (Kafka 4.2+).
		{"R1.7/empty policy: only the log start offset", mkPartition(200, 450, 450, old...), cfg(24*hour, 0, ""), []string{EL, EL, C, C, O}, nil},
		{"R1.7/empty policy with remote storage: local retention applies", withRemote(mkPartition(-1, 450, 450, old...), 399, 0),
			func() TopicConfig { c := tieredCfg(-1, -1, 24*hour, -2); c.CleanupPolicy = CleanupPolicy{}; return c }(), []string{ELT, ELT, ELT, ELT, O}, nil},
		{"R1.7/empty policy with remote copy disabled: only the log start offset", mkPartition(-1, 450, 450, old...),
			func() TopicConfig {
				c := tieredCfg(-1, -1, 24*hour, -2)
				c.CleanupPolicy, c.RemoteCopyDisable = CleanupPolicy{}, true
				return c
			}(), []string{C, C, C, C, O}, nil},
		// Negative retention.bytes.
		{"R1.7/retention.bytes below -1 is no limit", mkPartition(-1, 450, 450, fresh...), cfg(-1, -2, "delete"), []string{C, C, C, C, O}, nil},
		// Log cleaner disabled.
		{"R1.7/cleaner disabled: compact,delete gets no retention", mkPartition(200, 450, 450, old...),
			func() TopicConfig { c := cfg(24*hour, 0, "compact,delete"); c.CleanerDisabled = true; return c }(), []string{C, C, C, C, O}, nil},
		{"R1.7/cleaner disabled: compact gets no log start offset pass", mkPartition(200, 450, 450, old...),
			func() TopicConfig { c := cfg(24*hour, 0, "compact"); c.CleanerDisabled = true; return c }(), []string{C, C, C, C, O}, nil},
		{"R1.7/cleaner disabled: delete topics keep their retention", mkPartition(-1, 450, 450, old...),
			func() TopicConfig { c := cfg(24*hour, -1, "delete"); c.CleanerDisabled = true; return c }(), []string{ET, ET, ET, ET, EA}, nil},
		// -future logs.
		{"R1.7/future: retention like a live log", func() Partition { p := mkPartition(-1, 450, 450, old...); p.Kind = KindFuture; return p }(),
			cfg(24*hour, -1, "delete"), []string{ET, ET, ET, ET, EA}, nil},
		{"R1.7/future: size and log start offset too", func() Partition {
			p := mkPartition(100, 450, 450, fresh...)
			p.Kind = KindFuture
			return p
		}(), cfg(-1, 250, "delete"), []string{EL, ES, C, C, O}, nil},
		{"R1.7/future: compacted topics' future logs get none", func() Partition {
			p := mkPartition(200, 450, 450, old...)
			p.Kind = KindFuture
			return p
		}(), cfg(24*hour, -1, "compact,delete"), []string{C, C, C, C, O}, nil},
		{"R1.7/future: unknown high watermark allows nothing", func() Partition {
			p := mkPartition(-1, -1, 450, old...)
			p.Kind = KindFuture
			return p
		}(), cfg(24*hour, -1, "delete"), []string{C, C, C, C, O}, nil},
		{"R1.7/future of a tiered topic: upload state unknown, nothing eligible", func() Partition {
			p := mkPartition(-1, 450, 450, old...)
			p.Kind = KindFuture
			return p
		}(), tieredCfg(24*hour, -1, -2, -2), []string{C, C, C, C, O}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.p, tc.cfg, testNow)
			if r := render(got); !slices.Equal(r, tc.want) {
				t.Errorf("got  %v\nwant %v", r, tc.want)
			}
			if tc.tier != nil {
				var tiers []Tier
				for _, s := range got.Segments {
					tiers = append(tiers, s.Tier)
				}
				if !slices.Equal(tiers, tc.tier) {
					t.Errorf("tiers %v, want %v", tiers, tc.tier)
				}
				if want := tc.tier[0] != TierNone; got.Tiered != want {
					t.Errorf("Partition.Tiered %v, want %v", got.Tiered, want)
				}
			}
		})
	}
}

func TestConfigSetR1_7(t *testing.T) {
	cs := ConfigSet{Defaults: DefaultTopicConfig(), Topics: map[string]TopicConfig{}}
	for _, topic := range []string{"__consumer_offsets", "__transaction_state"} {
		if p := cs.For(topic).CleanupPolicy; p != (CleanupPolicy{Compact: true}) {
			t.Errorf("R1.7: offline %s without an entry has policy %v, want compact", topic, p)
		}
	}
	if p := cs.For("orders").CleanupPolicy; p != (CleanupPolicy{Delete: true}) {
		t.Errorf("orders: %v", p)
	}
	explicit := DefaultTopicConfig()
	cs.Topics["__consumer_offsets"] = explicit
	if p := cs.For("__consumer_offsets").CleanupPolicy; p != explicit.CleanupPolicy {
		t.Errorf("an entry wins: %v", p)
	}

	// ConfigSet.Classify hands a live tiered partition its remote offsets.
	tc := tieredCfg(-1, -1, 24*hour, -2)
	cs = ConfigSet{Defaults: DefaultTopicConfig(), Topics: map[string]TopicConfig{"t": tc},
		Remote: map[TopicPartition]RemoteOffsets{{"t", 0}: {HighestUploaded: 399, LocalLogStart: 0}}}
	p := mkPartition(-1, 450, 450, seg{0, 100, 50 * time.Hour}, seg{100, 100, 50 * time.Hour}, seg{400, 10, time.Minute})
	got := cs.Classify(p, testNow)
	if got.Remote == nil || got.Remote.HighestUploaded != 399 {
		t.Fatalf("remote %+v", got.Remote)
	}
	if r := render(got); !slices.Equal(r, []string{"eligible/local_retention_time", "eligible/local_retention_time", "open"}) {
		t.Errorf("got %v", r)
	}
	// A tiered partition is one before it has a segment (Summary counts
	// it among those whose offsets are unknown).
	if empty := cs.Classify(Partition{Topic: "t", Partition: 1, Kind: KindLive}, testNow); !empty.Tiered || empty.Remote != nil {
		t.Errorf("R1.7: empty tiered partition: %+v", empty)
	}
	if other := cs.Classify(Partition{Topic: "u", Kind: KindLive}, testNow); other.Tiered {
		t.Errorf("a local topic's partition is tiered: %+v", other)
	}
	delete(cs.Remote, TopicPartition{"t", 0})
	if r := render(cs.Classify(got, testNow)); !slices.Equal(r, []string{"closed", "closed", "open"}) {
		t.Errorf("R1.7: without remote offsets got %v", r)
	}
}

package agent

import (
	"errors"
	"time"
)

// Where a topic's config came from, and how old it is (spec R7.2): the
// config gate lets eligibility drive deletion only with the topic's own
// config, fetched from the cluster recently.

// ErrTopicUnknown is a topic's lookup error when the cluster does not have
// the topic (deleted since it was seen on disk, or another cluster's).
var ErrTopicUnknown = errors.New("topic unknown to the cluster")

// ConfigOrigin says where a topic's config came from. Values are metric
// label values.
type ConfigOrigin string

// Config origins.
const (
	// ConfigFromCluster: the topic's own config, read from the cluster
	// (DescribeConfigs).
	ConfigFromCluster ConfigOrigin = "cluster"
	// ConfigFromFile: the topic's entry in an offline configs file.
	ConfigFromFile ConfigOrigin = "file"
	// ConfigAssumed: nothing of its own; the defaults (Kafka's, a file's or
	// the broker's) were assumed.
	ConfigAssumed ConfigOrigin = "assumed"
)

// TopicConfigInfo is one topic's config with its provenance.
type TopicConfigInfo struct {
	Config TopicConfig
	Origin ConfigOrigin
	// Fetched is when Config was read from the cluster (Origin cluster).
	Fetched time.Time
	// Err is the failure of the topic's last lookup; Config is then older
	// (Fetched) or assumed.
	Err error
}

// FreshSince reports whether the topic's own config was read from the
// cluster at or after since, and its last lookup did not fail: the
// condition for its eligibility to drive deletion (spec R7.2).
func (i TopicConfigInfo) FreshSince(since time.Time) bool {
	return i.Origin == ConfigFromCluster && i.Err == nil && !i.Fetched.Before(since)
}

// Info returns topic's config with its provenance.
func (c ConfigSet) Info(topic string) TopicConfigInfo {
	i := TopicConfigInfo{Config: c.For(topic), Origin: ConfigAssumed, Err: c.Errors[topic]}
	if _, ok := c.Topics[topic]; ok {
		i.Origin = ConfigFromFile
		if at, ok := c.Fetched[topic]; ok {
			i.Origin, i.Fetched = ConfigFromCluster, at
		}
	}
	return i
}

// ConfigInfo returns the config the snapshot classified topic with, and
// where it came from.
func (s *Snapshot) ConfigInfo(topic string) TopicConfigInfo {
	return ConfigSet{Topics: s.Configs, Defaults: s.Defaults, Fetched: s.ConfigFetched, Errors: s.ConfigErrors}.Info(topic)
}

// Why a topic counts as without a fetched config. Values are metric label
// values.
const (
	ConfigMissingError   = "fetch_error" // its last lookup failed (ErrTopicUnknown included)
	ConfigMissingOffline = "offline"     // its config is an offline file's
	ConfigMissingNone    = "not_fetched" // no config of its own yet: defaults assumed
)

// ConfigMissingReasons lists the reasons, for metrics that emit each at
// zero.
func ConfigMissingReasons() []string {
	return []string{ConfigMissingError, ConfigMissingOffline, ConfigMissingNone}
}

// LogDirConfigs summarises the config provenance of the live topics with
// a partition in one log dir.
type LogDirConfigs struct {
	LogDir string
	// Topics is the number of live topics in the log dir.
	Topics int
	// OldestFetch is the oldest time a config from the cluster in use for
	// one of them was fetched (zero when none came from the cluster).
	OldestFetch time.Time
	// Without counts the topics whose config in use is not a successful
	// cluster lookup, by reason (ConfigMissingReasons).
	Without map[string]int
}

// ConfigStatus summarises config provenance per log dir, in log dir order
// (spec R7.2; the exporter's config age metrics).
func (s *Snapshot) ConfigStatus() []LogDirConfigs {
	out := make([]LogDirConfigs, 0, len(s.LogDirs))
	for i := range s.LogDirs {
		ld := &s.LogDirs[i]
		st := LogDirConfigs{LogDir: ld.Path, Without: map[string]int{}}
		seen := map[string]bool{}
		for k := range ld.Partitions {
			p := ld.Partitions[k]
			if p.Kind != KindLive || seen[p.Topic] {
				continue
			}
			seen[p.Topic] = true
			st.Topics++
			info := s.ConfigInfo(p.Topic)
			if info.Origin == ConfigFromCluster && (st.OldestFetch.IsZero() || info.Fetched.Before(st.OldestFetch)) {
				st.OldestFetch = info.Fetched
			}
			switch {
			case info.Err != nil:
				st.Without[ConfigMissingError]++
			case info.Origin == ConfigFromFile:
				st.Without[ConfigMissingOffline]++
			case info.Origin == ConfigAssumed:
				st.Without[ConfigMissingNone]++
			}
		}
		out = append(out, st)
	}
	return out
}

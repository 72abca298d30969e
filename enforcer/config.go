package enforcer

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// Profile names (spec R3.1-R3.4).
const (
	ProfileCloud      = "cloud"
	ProfileLocal      = "local"
	ProfileServerless = "serverless"
	ProfileCustom     = "custom"
)

// Protection strategies (spec R4.3).
const (
	StrategyACL   = "acl"
	StrategyQuota = "quota"
)

// Config is the `enforcer:` section of the configuration file.
type Config struct {
	// Enabled switches enforcement on. False (the default) is observe mode:
	// every action is computed, logged and counted, none is performed (R4.4).
	Enabled bool `yaml:"enabled"`
	// Profile is cloud (default), local, serverless or custom.
	Profile string `yaml:"profile"`
	// Bands are the custom profile's bands, lowest first.
	Bands []BandConfig `yaml:"bands"`
	// Schedule is when scheduled deletion of eligible segments runs.
	Schedule ScheduleConfig `yaml:"schedule"`
	// HysteresisPoints: protection lifts only below the protect band's
	// lower bound minus this many percentage points (default 5, R3.7).
	HysteresisPoints float64 `yaml:"hysteresisPoints"`
	// Protection chooses how writes are refused.
	Protection ProtectionConfig `yaml:"protection"`
	// MaxActionsPerInterval bounds the actions performed (or, in observe
	// mode, reported) per Interval (default 500).
	MaxActionsPerInterval int `yaml:"maxActionsPerInterval"`
	// Interval is the period of the reconcile ticker (default 10s); new
	// snapshots trigger reconciles in between.
	Interval time.Duration `yaml:"interval"`
	// StaleAfter: a snapshot older than this blocks destructive actions
	// (default 2m).
	StaleAfter time.Duration `yaml:"staleAfter"`
	// BrokerID is the broker the guard acts for: its log dirs'
	// meta.properties must name it (spec R7.1). -1 or unset: the one node
	// of the connected cluster the log dirs name (agent.GuardedNode).
	BrokerID *int32 `yaml:"brokerId"`
	// OwnershipTopic is the compacted topic recording which ACLs and quotas
	// each broker's agent set (default __kafka_disk_guard_protection).
	OwnershipTopic string `yaml:"ownershipTopic"`

	// Evidence: how the evidence for destructive actions is gathered and
	// judged (spec R7).
	Evidence EvidenceConfig `yaml:"evidence"`
	// Purge bounds purges of unexpired data (spec R7.3).
	Purge PurgeConfig `yaml:"purge"`
	// Relief: the lossless rungs before any purge (spec R3.8): the cordon
	// (cordon.go) and moves within the broker (jbod_config.go).
	Relief ReliefConfig `yaml:"relief"`
}

// EvidenceConfig is the `enforcer.evidence` section (spec R7.1, R7.2,
// R7.5).
type EvidenceConfig struct {
	// IdentityInterval: how often the connected cluster's id and this
	// broker's log dirs (DescribeLogDirs) are read again (default 1m). A
	// new log dir, or one not confirmed, is checked again within an
	// Interval.
	IdentityInterval time.Duration `yaml:"identityInterval"`
	// RightsInterval: how often the principal's rights are checked again
	// (default 10m); first at start, once connected.
	RightsInterval time.Duration `yaml:"rightsInterval"`
	// ConfigMaxAge: a topic's eligibility drives deletion only with its
	// own configs read from the cluster at most this long ago (default
	// 10m; the guard sets twice topicConfigs.refreshInterval).
	ConfigMaxAge time.Duration `yaml:"configMaxAge"`
	// ClockJumpTolerance: a forward jump of the wall clock between two
	// passes (against the monotonic clock) larger than this holds back
	// deletions by retention time (default 1m).
	ClockJumpTolerance time.Duration `yaml:"clockJumpTolerance"`
	// ClockJumpHold: how long such a jump holds them back (default 1h).
	ClockJumpHold time.Duration `yaml:"clockJumpHold"`
	// FutureTolerance: a partition whose newest data is stamped further
	// in the future than this has its deletions by retention time held
	// back (default 1h, Kafka's message.timestamp.after.max.ms).
	FutureTolerance time.Duration `yaml:"futureTolerance"`
}

// PurgeConfig is the `enforcer.purge` section: limits on purging data not
// yet past retention (spec R7.3). Percentages are of the log dir's
// capacity.
type PurgeConfig struct {
	// MaxPercentPerPass: unexpired bytes one pass may purge in a log dir
	// (default 2).
	MaxPercentPerPass float64 `yaml:"maxPercentPerPass"`
	// MaxPercentPerHour, MaxPercentPerDay: unexpired bytes purged in a
	// log dir over the last hour and the last 24 hours (defaults 5 and
	// 10). Once spent, purging waits and write protection takes over.
	MaxPercentPerHour float64 `yaml:"maxPercentPerHour"`
	MaxPercentPerDay  float64 `yaml:"maxPercentPerDay"`
	// FloorSegments: a purge never takes a partition's newest this many
	// closed segments (default 1, at least 1); the open segment is never
	// deleted anyway.
	FloorSegments int `yaml:"floorSegments"`
	// FloorPercent: nor the newest segments holding this share of the
	// partition's bytes (default 10).
	FloorPercent float64 `yaml:"floorPercent"`
	// OtherBytesPercent: used bytes that live Kafka partitions do not
	// explain (filesystem overhead, the metadata log, other files) up to
	// this share of the capacity are expected; beyond it they are not
	// purged for: usage is left above the target by that much (default 5).
	OtherBytesPercent float64 `yaml:"otherBytesPercent"`
}

// BandConfig is one band of a custom profile. Percentages are 0-100.
type BandConfig struct {
	// Name labels the band in logs and metrics (default: the action).
	Name string `yaml:"name"`
	// From is the band's inclusive lower bound in percent.
	From float64 `yaml:"from"`
	// Action is none, retention, scheduled, periodic, purge,
	// purge_fraction or protect.
	Action string `yaml:"action"`
	// Target (percent) for periodic, purge and purge_fraction: freeing stops
	// once usage is under it (default: the band's From).
	Target *float64 `yaml:"target"`
	// Fraction (0-1) of each partition's messages a purge_fraction pass
	// may take (default 0.10).
	Fraction float64 `yaml:"fraction"`
}

// ScheduleConfig is the daily time of scheduled deletion.
type ScheduleConfig struct {
	// Time of day, "HH:MM" (default "04:00").
	Time string `yaml:"time"`
	// Timezone, an IANA name (default "UTC").
	Timezone string `yaml:"timezone"`
}

// ProtectionConfig chooses the write-protection strategy and how the
// protection is owned (spec R8).
type ProtectionConfig struct {
	// Strategy is acl (default) or quota.
	Strategy string `yaml:"strategy"`
	// ProducerByteRate is the quota strategy's producer_byte_rate for the
	// default client entity (default 1024 bytes/s per broker).
	ProducerByteRate int64 `yaml:"producerByteRate"`
	// LeaseDuration: the agent renews the lease on its protection while
	// its inputs are trusted (fresh snapshot, broker reachable and alive);
	// a peer agent lifts protection whose lease it saw unrenewed this long
	// (default 60s, at least three enforcer.interval). Producers stay blocked at most about this long after
	// the agent that blocked them died.
	LeaseDuration time.Duration `yaml:"leaseDuration"`
	// RecordTimeout bounds how long switching protection on waits for its
	// ownership record (default 500ms): protection is applied whether or
	// not the record was written in time, and the record is written after.
	// An agent without a live lease that did not read the ledger this pass
	// reads it first, within this bound too (lease fencing).
	RecordTimeout time.Duration `yaml:"recordTimeout"`
	// AllowEveryoneIfNoACLFound is the brokers'
	// allow.everyone.if.no.acl.found as the guard must assume it: auto
	// (default: read from the brokers; set but hidden counts as unknown,
	// never as true), true or false.
	AllowEveryoneIfNoACLFound string `yaml:"allowEveryoneIfNoAclFound"`
	// ExemptPrincipals keep writing during protection (e.g.
	// User:kafka-connect). Default none.
	ExemptPrincipals []string `yaml:"exemptPrincipals"`
	// ExemptTopics are never protected: glob patterns on the topic name
	// (path.Match: *, ?, [...]). Default DefaultExemptTopics; [] for none.
	// Topics starting with __ (Kafka's and the guard's own) are always
	// exempt.
	ExemptTopics []string `yaml:"exemptTopics"`
}

// AllowEveryone is the configured allow.everyone.if.no.acl.found (auto:
// read it, reported false).
func (c ProtectionConfig) AllowEveryone() (v AllowEveryone, auto bool) {
	switch c.AllowEveryoneIfNoACLFound {
	case "true":
		return AllowEveryoneTrue, false
	case "false":
		return AllowEveryoneFalse, false
	}
	return AllowEveryoneUnknown, true
}

// DefaultExemptTopics are the small internal topics of Kafka Connect
// (its default names and Strimzi's) and Schema Registry: denied, the
// whole Connect worker or registry fails, not only the writes that fill
// the disk.
func DefaultExemptTopics() []string {
	return []string{"_schemas", "connect-configs", "connect-offsets", "connect-status",
		"connect-cluster-configs", "connect-cluster-offsets", "connect-cluster-status"}
}

// Defaults.
const (
	DefaultHysteresisPoints      = 5
	DefaultMaxActionsPerInterval = 500
	DefaultInterval              = 10 * time.Second
	DefaultStaleAfter            = 2 * time.Minute
	DefaultScheduleTime          = "04:00"
	DefaultTimezone              = "UTC"
	DefaultOwnershipTopic        = "__kafka_disk_guard_protection"
	DefaultProducerByteRate      = 1024
	DefaultPurgeFraction         = 0.10
	DefaultLeaseDuration         = time.Minute
	DefaultRecordTimeout         = 500 * time.Millisecond

	DefaultIdentityInterval   = time.Minute
	DefaultRightsInterval     = 10 * time.Minute
	DefaultConfigMaxAge       = 10 * time.Minute
	DefaultClockJumpTolerance = time.Minute
	DefaultClockJumpHold      = time.Hour
	DefaultFutureTolerance    = time.Hour

	DefaultPurgeMaxPercentPerPass = 2
	DefaultPurgeMaxPercentPerHour = 5
	DefaultPurgeMaxPercentPerDay  = 10
	DefaultPurgeFloorSegments     = 1
	DefaultPurgeFloorPercent      = 10
	DefaultPurgeOtherBytesPercent = 5
)

// WithDefaults returns cfg with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Profile == "" {
		c.Profile = ProfileCloud
	}
	if c.Schedule.Time == "" {
		c.Schedule.Time = DefaultScheduleTime
	}
	if c.Schedule.Timezone == "" {
		c.Schedule.Timezone = DefaultTimezone
	}
	if c.HysteresisPoints == 0 {
		c.HysteresisPoints = DefaultHysteresisPoints
	}
	if c.Protection.Strategy == "" {
		c.Protection.Strategy = StrategyACL
	}
	if c.Protection.ProducerByteRate == 0 {
		c.Protection.ProducerByteRate = DefaultProducerByteRate
	}
	if c.Protection.RecordTimeout == 0 {
		c.Protection.RecordTimeout = DefaultRecordTimeout
	}
	if c.Protection.AllowEveryoneIfNoACLFound == "" {
		c.Protection.AllowEveryoneIfNoACLFound = "auto"
	}
	if c.Protection.ExemptTopics == nil {
		c.Protection.ExemptTopics = DefaultExemptTopics()
	}
	if c.MaxActionsPerInterval == 0 {
		c.MaxActionsPerInterval = DefaultMaxActionsPerInterval
	}
	if c.Interval == 0 {
		c.Interval = DefaultInterval
	}
	if c.StaleAfter == 0 {
		c.StaleAfter = DefaultStaleAfter
	}
	if c.Protection.LeaseDuration == 0 {
		c.Protection.LeaseDuration = max(DefaultLeaseDuration, 3*c.Interval)
	}
	if c.OwnershipTopic == "" {
		c.OwnershipTopic = DefaultOwnershipTopic
	}
	c.Evidence = c.Evidence.WithDefaults()
	c.Purge = c.Purge.WithDefaults()
	return c
}

// WithDefaults returns c with every unset field at its default.
func (c EvidenceConfig) WithDefaults() EvidenceConfig {
	for _, f := range c.durations() {
		if *f.d == 0 {
			*f.d = f.def
		}
	}
	return c
}

// durationKey is a duration field with its YAML key and default.
type durationKey struct {
	name string
	d    *time.Duration
	def  time.Duration
}

// durations lists the section's fields with their YAML keys and defaults.
func (c *EvidenceConfig) durations() []durationKey {
	return []durationKey{
		{"identityInterval", &c.IdentityInterval, DefaultIdentityInterval},
		{"rightsInterval", &c.RightsInterval, DefaultRightsInterval},
		{"configMaxAge", &c.ConfigMaxAge, DefaultConfigMaxAge},
		{"clockJumpTolerance", &c.ClockJumpTolerance, DefaultClockJumpTolerance},
		{"clockJumpHold", &c.ClockJumpHold, DefaultClockJumpHold},
		{"futureTolerance", &c.FutureTolerance, DefaultFutureTolerance},
	}
}

// Validate checks the section (after defaults) and names the field.
func (c EvidenceConfig) Validate() error {
	c = c.WithDefaults()
	for _, f := range c.durations() {
		if *f.d < 0 {
			return fmt.Errorf("enforcer.evidence.%s: %s is negative; want a duration > 0 (default %s)", f.name, *f.d, f.def)
		}
	}
	return nil
}

// WithDefaults returns c with every unset field at its default.
func (c PurgeConfig) WithDefaults() PurgeConfig {
	for _, f := range []struct {
		v   *float64
		def float64
	}{
		{&c.MaxPercentPerPass, DefaultPurgeMaxPercentPerPass}, {&c.MaxPercentPerHour, DefaultPurgeMaxPercentPerHour},
		{&c.MaxPercentPerDay, DefaultPurgeMaxPercentPerDay}, {&c.FloorPercent, DefaultPurgeFloorPercent},
		{&c.OtherBytesPercent, DefaultPurgeOtherBytesPercent},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.FloorSegments == 0 {
		c.FloorSegments = DefaultPurgeFloorSegments
	}
	return c
}

// Validate checks the section (after defaults) and names the field.
func (c PurgeConfig) Validate() error {
	c = c.WithDefaults()
	for _, f := range []struct {
		name string
		v    float64
		max  float64
	}{
		{"maxPercentPerPass", c.MaxPercentPerPass, 100},
		{"maxPercentPerHour", c.MaxPercentPerHour, 100},
		{"maxPercentPerDay", c.MaxPercentPerDay, 100},
		{"floorPercent", c.FloorPercent, 99},
		{"otherBytesPercent", c.OtherBytesPercent, 100},
	} {
		if f.v < 0 || f.v > f.max {
			return fmt.Errorf("enforcer.purge.%s: %v is outside (0, %v]", f.name, f.v, f.max)
		}
	}
	if c.FloorSegments < 0 {
		return fmt.Errorf("enforcer.purge.floorSegments: %d is negative; want at least 1 (default %d)", c.FloorSegments, DefaultPurgeFloorSegments)
	}
	return nil
}

// Validate checks the configuration (after defaults) and names the field
// at fault.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if err := c.Relief.Move.validate(); err != nil {
		return err
	}
	if c.Relief.ReassignBytesPerSecond < 0 {
		return fmt.Errorf("enforcer.relief.reassignBytesPerSecond: %d is negative", c.Relief.ReassignBytesPerSecond)
	}
	switch c.Profile {
	case ProfileCloud, ProfileLocal, ProfileServerless:
		if len(c.Bands) > 0 {
			return fmt.Errorf("enforcer.bands: only allowed with profile %q, not %q", ProfileCustom, c.Profile)
		}
	case ProfileCustom:
		if _, err := customBands(c.Bands); err != nil {
			return err
		}
	default:
		return fmt.Errorf("enforcer.profile: %q is not one of cloud, local, serverless, custom", c.Profile)
	}
	if _, _, err := parseClock(c.Schedule.Time); err != nil {
		return fmt.Errorf("enforcer.schedule.time: %w", err)
	}
	if err := c.Relief.Cordon.validate(); err != nil {
		return err
	}
	if _, err := time.LoadLocation(c.Schedule.Timezone); err != nil {
		return fmt.Errorf("enforcer.schedule.timezone: %w", err)
	}
	if c.HysteresisPoints < 0 || c.HysteresisPoints >= 100 {
		return fmt.Errorf("enforcer.hysteresisPoints: %v is outside [0, 100)", c.HysteresisPoints)
	}
	switch c.Protection.Strategy {
	case StrategyACL, StrategyQuota:
	default:
		return fmt.Errorf("enforcer.protection.strategy: %q is not one of acl, quota", c.Protection.Strategy)
	}
	if c.Protection.ProducerByteRate < 0 {
		return fmt.Errorf("enforcer.protection.producerByteRate: %d is negative", c.Protection.ProducerByteRate)
	}
	if err := c.Protection.validate(c.Interval); err != nil {
		return err
	}
	if c.MaxActionsPerInterval < 0 {
		return fmt.Errorf("enforcer.maxActionsPerInterval: %d is negative", c.MaxActionsPerInterval)
	}
	if c.Interval < 0 {
		return fmt.Errorf("enforcer.interval: %s is negative", c.Interval)
	}
	if c.StaleAfter < 0 {
		return fmt.Errorf("enforcer.staleAfter: %s is negative", c.StaleAfter)
	}
	if c.OwnershipTopic != "" && strings.ContainsAny(c.OwnershipTopic, " /\\") {
		return fmt.Errorf("enforcer.ownershipTopic: %q is not a valid topic name", c.OwnershipTopic)
	}
	if err := c.Evidence.Validate(); err != nil {
		return err
	}
	return c.Purge.Validate()
}

// parseClock parses "HH:MM".
func parseClock(s string) (hour, minute int, err error) {
	h, m, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not HH:MM", s)
	}
	hour, err1 := strconv.Atoi(h)
	minute, err2 := strconv.Atoi(m)
	if err := errors.Join(err1, err2); err != nil || hour < 0 || hour > 23 || minute < 0 || minute > 59 || len(m) != 2 {
		return 0, 0, fmt.Errorf("%q is not HH:MM", s)
	}
	return hour, minute, nil
}

// validate checks the ownership settings of protection (after defaults).
func (p ProtectionConfig) validate(interval time.Duration) error {
	if p.LeaseDuration < 2*interval {
		return fmt.Errorf("enforcer.protection.leaseDuration: %s is shorter than two enforcer.interval (%s): the lease could not be renewed in time", p.LeaseDuration, interval)
	}
	if p.RecordTimeout < 0 || p.RecordTimeout > p.LeaseDuration {
		return fmt.Errorf("enforcer.protection.recordTimeout: %s is outside (0, leaseDuration %s] (default %s)", p.RecordTimeout, p.LeaseDuration, DefaultRecordTimeout)
	}
	switch p.AllowEveryoneIfNoACLFound {
	case "auto", "true", "false":
	default:
		return fmt.Errorf("enforcer.protection.allowEveryoneIfNoAclFound: %q is not one of auto, true, false", p.AllowEveryoneIfNoACLFound)
	}
	for i, pr := range p.ExemptPrincipals {
		typ, name, ok := strings.Cut(pr, ":")
		switch {
		case !ok || typ == "" || name == "":
			return fmt.Errorf("enforcer.protection.exemptPrincipals[%d]: %q is not TYPE:NAME (e.g. User:kafka-connect)", i, pr)
		case pr == AnyPrincipal:
			return fmt.Errorf("enforcer.protection.exemptPrincipals[%d]: %s exempts everyone; use a profile without protection instead", i, pr)
		}
	}
	for i, t := range p.ExemptTopics {
		if _, err := path.Match(t, ""); err != nil || t == "" {
			return fmt.Errorf("enforcer.protection.exemptTopics[%d]: %q is not a glob pattern (path.Match: *, ?, [...])", i, t)
		}
	}
	return nil
}

// configuredBroker is BrokerID when set and >= 0, else -1 (learned from
// the cluster: agent.GuardedNode).
func (c Config) configuredBroker() int32 {
	if c.BrokerID != nil && *c.BrokerID >= 0 {
		return *c.BrokerID
	}
	return -1
}

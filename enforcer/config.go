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
	// BrokerID overrides the broker id read from meta.properties
	// (-1 or unset: from the snapshot).
	BrokerID *int32 `yaml:"brokerId"`
	// OwnershipTopic is the compacted topic recording which ACLs and quotas
	// each broker's agent set (default __kafka_disk_guard_protection).
	OwnershipTopic string `yaml:"ownershipTopic"`
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
	return c
}

// Validate checks the configuration (after defaults) and names the field
// at fault.
func (c Config) Validate() error {
	c = c.WithDefaults()
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
	return nil
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

package reserve

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/human"
)

// Config is the admission section of the configuration file: the policy
// (spec R5.4), the cluster model the guard answers from, and the bound on
// concurrent checks.
type Config struct {
	// Enabled: answer admission checks and keep the cluster model fresh
	// (default true when a cluster is configured).
	Enabled *bool `yaml:"enabled"`
	// LimitPercent: a request that takes reserved storage above this share
	// of the storage is refused (spec R5.4). Default 90.
	LimitPercent float64 `yaml:"limitPercent"`
	// CompactFlatBytes is what a compact-only partition reserves. Default
	// 1 GiB (spec R5.1).
	CompactFlatBytes int64 `yaml:"compactFlatBytes"`
	// BrokerStorageBytes, when > 0, is every broker's configured storage
	// (a PVC size or a quota) instead of the log dirs' total bytes.
	BrokerStorageBytes int64 `yaml:"brokerStorageBytes"`
	// RefreshInterval: how often the cluster model is read again (default
	// 30s).
	RefreshInterval time.Duration `yaml:"refreshInterval"`
	// MaxModelAge: a check against an older model answers 503, never a
	// guess (default 2m; more than RefreshInterval).
	MaxModelAge time.Duration `yaml:"maxModelAge"`
	// MaxConcurrentChecks bounds the checks answered at once; more answer
	// 429 with Retry-After (default 8).
	MaxConcurrentChecks int `yaml:"maxConcurrentChecks"`
	// ExemptTopics are always admitted besides Kafka's own internal
	// topics: the guard's ownership topic (set by the guard from
	// enforcer.ownershipTopic, not a key of the file): write protection
	// must never wait for admission (spec R8.4).
	ExemptTopics []string `yaml:"-"`
}

// Defaults.
const (
	DefaultLimitPercent        = 90.0
	DefaultRefreshInterval     = 30 * time.Second
	DefaultMaxModelAge         = 2 * time.Minute
	DefaultMaxConcurrentChecks = 8
)

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Enabled == nil {
		on := true
		c.Enabled = &on
	}
	if c.LimitPercent == 0 {
		c.LimitPercent = DefaultLimitPercent
	}
	if c.CompactFlatBytes == 0 {
		c.CompactFlatBytes = DefaultCompactFlatBytes
	}
	if c.RefreshInterval == 0 {
		c.RefreshInterval = DefaultRefreshInterval
	}
	if c.MaxModelAge == 0 {
		c.MaxModelAge = max(DefaultMaxModelAge, 2*c.RefreshInterval)
	}
	if c.MaxConcurrentChecks == 0 {
		c.MaxConcurrentChecks = DefaultMaxConcurrentChecks
	}
	return c
}

// IsEnabled reports whether admission is on (after defaults).
func (c Config) IsEnabled() bool { return c.Enabled == nil || *c.Enabled }

// Validate checks the values (after defaults); errors name the YAML path
// and the allowed values.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.LimitPercent <= 0 || c.LimitPercent > 100:
		return fmt.Errorf("admission.limitPercent: %g is outside (0, 100] (default %g)", c.LimitPercent, DefaultLimitPercent)
	case c.CompactFlatBytes < 0:
		return fmt.Errorf("admission.compactFlatBytes: %d is negative; want bytes > 0 (default %d)", c.CompactFlatBytes, int64(DefaultCompactFlatBytes))
	case c.BrokerStorageBytes < 0:
		return fmt.Errorf("admission.brokerStorageBytes: %d is negative; want 0 (the log dirs' total bytes) or bytes > 0", c.BrokerStorageBytes)
	case c.RefreshInterval < 0:
		return fmt.Errorf("admission.refreshInterval: %s is negative; want a duration > 0 (default %s)", c.RefreshInterval, DefaultRefreshInterval)
	case c.MaxModelAge <= c.RefreshInterval:
		return fmt.Errorf("admission.maxModelAge: %s must be longer than admission.refreshInterval (%s)", c.MaxModelAge, c.RefreshInterval)
	case c.MaxConcurrentChecks < 0:
		return fmt.Errorf("admission.maxConcurrentChecks: %d is negative; want 1 or more (default %d)", c.MaxConcurrentChecks, DefaultMaxConcurrentChecks)
	}
	return nil
}

// Operation is what a request asks for.
type Operation string

// Operations.
const (
	CreateTopic      Operation = "create_topic"
	CreatePartitions Operation = "create_partitions"
)

// Request is a topic creation or a partition increase to admit.
type Request struct {
	Operation Operation `json:"operation"`
	Topic     string    `json:"topic"`
	// Partitions: the partition count of a new topic, or the new total
	// count of an existing one (as in Kafka's CreatePartitions). -1 or 0
	// for a new topic: the broker default.
	Partitions int32 `json:"partitions"`
	// ReplicationFactor of a new topic; -1 or 0: the broker default.
	// Ignored for create_partitions (the topic's own).
	ReplicationFactor int16 `json:"replication_factor,omitempty"`
	// Configs of a new topic (only those set; the rest are the broker
	// defaults). Ignored for create_partitions.
	Configs map[string]string `json:"configs,omitempty"`
	// Assignments places the new partitions' replicas by hand (partition
	// id to broker ids).
	Assignments map[int32][]int32 `json:"assignments,omitempty"`
	// WriteRateBytesPerSecond per partition, for retention.bytes = -1
	// (spec R5.2); 0 when unknown.
	WriteRateBytesPerSecond float64 `json:"write_rate_bytes_per_second,omitempty"`
}

// Figures are reserved bytes against storage, before and after a request.
type Figures struct {
	BrokerID            *int32  `json:"broker_id,omitempty"`
	StorageBasis        string  `json:"storage_basis,omitempty"`
	NewReplicasOnBroker int32   `json:"new_replicas,omitempty"`
	StorageBytes        int64   `json:"storage_bytes"`
	ReservedBytes       int64   `json:"reserved_bytes"`
	RequestedBytes      int64   `json:"requested_bytes"`
	ReservedAfterBytes  int64   `json:"reserved_after_bytes"`
	PercentBefore       float64 `json:"percent_before"`
	PercentAfter        float64 `json:"percent_after"`
	OverLimit           bool    `json:"over_limit"`
}

// Decision is the answer to a Request.
type Decision struct {
	Allowed      bool      `json:"allowed"`
	Operation    Operation `json:"operation"`
	Topic        string    `json:"topic"`
	LimitPercent float64   `json:"limit_percent"`
	// NewPartitions and ReplicationFactor of what is added.
	NewPartitions     int32 `json:"new_partitions"`
	ReplicationFactor int16 `json:"replication_factor"`
	// PartitionBytes is what one new replica reserves, and Basis how.
	PartitionBytes int64   `json:"partition_reserved_bytes"`
	Basis          Basis   `json:"basis"`
	Cluster        Figures `json:"cluster"`
	// Brokers: per-broker figures (empty for offline figures). New
	// replicas without a manual assignment are counted at the largest
	// share a balanced placement can give one broker.
	Brokers []Figures `json:"brokers,omitempty"`
	// Reason is the PolicyViolation message when refused; a note otherwise.
	Reason string `json:"reason,omitempty"`
}

// ErrInvalidRequest marks a request the guard cannot judge (unknown topic,
// fewer partitions, a replication factor above the broker count).
var ErrInvalidRequest = errors.New("invalid request")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, a...))
}

// Check decides whether req fits under the limit, for the cluster and for
// every broker that gets new replicas (spec R5.4).
func Check(st State, req Request, cfg Config) (Decision, error) {
	if err := cfg.Validate(); err != nil {
		return Decision{}, err
	}
	cfg = cfg.WithDefaults()
	if req.Topic == "" {
		return Decision{}, invalid("no topic name")
	}
	d := Decision{Operation: req.Operation, Topic: req.Topic, LimitPercent: cfg.LimitPercent}
	input, firstNew, err := newPartitions(st, req, &d)
	if err != nil {
		return Decision{}, err
	}
	if n := len(st.Brokers); n > 0 && int(d.ReplicationFactor) > n {
		return Decision{}, invalid("replication factor %d is larger than the %d brokers", d.ReplicationFactor, n)
	}
	input.Topic = req.Topic
	input.CompactFlatBytes = cfg.CompactFlatBytes
	input.WriteRateBytesPerSecond = req.WriteRateBytesPerSecond
	d.PartitionBytes, d.Basis = Partition(input)

	replicas := int64(d.NewPartitions) * int64(d.ReplicationFactor)
	d.Cluster = figures(st.StorageBytes, st.ReservedBytes, replicas*d.PartitionBytes, cfg.LimitPercent)

	perBroker, err := placement(st, req, d, firstNew)
	if err != nil {
		return Decision{}, err
	}
	for _, b := range st.Brokers {
		n := perBroker[b.ID]
		f := figures(b.StorageBytes, b.ReservedBytes, int64(n)*d.PartitionBytes, cfg.LimitPercent)
		id := b.ID
		f.BrokerID, f.StorageBasis, f.NewReplicasOnBroker = &id, b.StorageBasis, n
		d.Brokers = append(d.Brokers, f)
	}
	decide(&d, req, cfg)
	return d, nil
}

// newPartitions fills the decision's new partitions and replication
// factor for the operation, and returns the sizing input (its config)
// and the index of the first new partition.
func newPartitions(st State, req Request, d *Decision) (input PartitionInput, firstNew int32, err error) {
	switch req.Operation {
	case CreateTopic:
		if _, ok := st.Topics[req.Topic]; ok {
			return input, 0, invalid("topic %s already exists", req.Topic)
		}
		c, err := agent.ApplyTopicConfigs(st.Defaults, req.Configs)
		if err != nil {
			return input, 0, invalid("%v", err)
		}
		input.Config = c
		d.NewPartitions, d.ReplicationFactor = req.Partitions, req.ReplicationFactor
		if len(req.Assignments) > 0 {
			d.NewPartitions = int32(len(req.Assignments))
			for _, r := range req.Assignments {
				d.ReplicationFactor = int16(len(r))
				break
			}
		}
		if d.NewPartitions <= 0 {
			d.NewPartitions = st.DefaultPartitions
		}
		if d.ReplicationFactor <= 0 {
			d.ReplicationFactor = st.DefaultReplicationFactor
		}
	case CreatePartitions:
		t, ok := st.Topics[req.Topic]
		if !ok {
			return input, 0, invalid("topic %s does not exist", req.Topic)
		}
		have := int32(len(t.Partitions))
		if req.Partitions <= have {
			return input, 0, invalid("topic %s has %d partitions; the new count %d must be larger", req.Topic, have, req.Partitions)
		}
		input.Config = t.Config
		firstNew = have
		d.NewPartitions = req.Partitions - have
		d.ReplicationFactor = 1
		if have > 0 {
			d.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
		}
	default:
		return input, 0, invalid("operation %q: want %s or %s", req.Operation, CreateTopic, CreatePartitions)
	}
	return input, firstNew, nil
}

// decide allows the request, or refuses it with the reason where the
// cluster or a broker that gets new replicas goes over the limit;
// Kafka's internal topics and the guard's ownership topic are always
// admitted.
func decide(d *Decision, req Request, cfg Config) {
	d.Allowed = true
	var over []string
	if d.Cluster.OverLimit {
		over = append(over, "cluster "+describe(d.Cluster))
	}
	for _, f := range d.Brokers {
		if f.OverLimit && f.RequestedBytes > 0 {
			over = append(over, fmt.Sprintf("broker %d %s", *f.BrokerID, describe(f)))
		}
	}
	if agent.IsKafkaInternalTopic(req.Topic) {
		d.Reason = "kafka internal topic: always admitted"
		return
	}
	if cfg.exempt(req.Topic) {
		d.Reason = "the guard's ownership topic: always admitted"
		return
	}
	if len(over) > 0 {
		d.Allowed = false
		d.Reason = fmt.Sprintf("reserved storage limit of %s%% exceeded: %s; %s %s: %d partition(s) x %d replica(s) x %s (%s) = %s requested",
			pct(cfg.LimitPercent), strings.Join(over, "; "), verb(req.Operation), req.Topic,
			d.NewPartitions, d.ReplicationFactor, human.Bytes(d.PartitionBytes), d.Basis, human.Bytes(d.Cluster.RequestedBytes))
	}
}

func verb(op Operation) string {
	if op == CreatePartitions {
		return "add partitions to topic"
	}
	return "create topic"
}

func describe(f Figures) string {
	return fmt.Sprintf("would be at %s%% (current %s = %s%%, requested %s, storage %s)",
		pct(f.PercentAfter), human.Bytes(f.ReservedBytes), pct(f.PercentBefore), human.Bytes(f.RequestedBytes), human.Bytes(f.StorageBytes))
}

func figures(storage, reserved, requested int64, limit float64) Figures {
	f := Figures{StorageBytes: storage, ReservedBytes: reserved, RequestedBytes: requested, ReservedAfterBytes: reserved + requested}
	if storage > 0 {
		f.PercentBefore = float64(reserved) / float64(storage) * 100
		f.PercentAfter = float64(f.ReservedAfterBytes) / float64(storage) * 100
	}
	f.OverLimit = storage <= 0 || f.PercentAfter > limit
	return f
}

// placement counts the new replicas per broker: exactly for a manual
// assignment, otherwise the largest share a balanced placement can give
// one broker: min(partitions, ceil(partitions x RF / brokers)).
func placement(st State, req Request, d Decision, firstNew int32) (map[int32]int32, error) {
	out := map[int32]int32{}
	if len(st.Brokers) == 0 {
		return out, nil
	}
	known := map[int32]bool{}
	for _, b := range st.Brokers {
		known[b.ID] = true
	}
	if len(req.Assignments) > 0 {
		ids := make([]int32, 0, len(req.Assignments))
		for p := range req.Assignments {
			ids = append(ids, p)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		for _, p := range ids {
			if p < firstNew {
				return nil, invalid("assignment for partition %d: it already exists", p)
			}
			for _, b := range req.Assignments[p] {
				if !known[b] {
					return nil, invalid("assignment for partition %d: broker %d is not in the cluster", p, b)
				}
				out[b]++
			}
		}
		return out, nil
	}
	n := int64(len(st.Brokers))
	share := (int64(d.NewPartitions)*int64(d.ReplicationFactor) + n - 1) / n
	share = min(share, int64(d.NewPartitions))
	for _, b := range st.Brokers {
		out[b.ID] = int32(share)
	}
	return out, nil
}

func pct(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}

// exempt reports whether the topic is one of ExemptTopics.
func (c Config) exempt(topic string) bool {
	for _, t := range c.ExemptTopics {
		if t == topic {
			return true
		}
	}
	return false
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
)

// guardConfig is the configuration file of `kafka-disk-guard run`
// (docs/configuration.md). Unknown fields are refused.
type guardConfig struct {
	// The agent: logDirs, capacityBytes and the watcher's intervals.
	agent.Config `yaml:",inline"`

	Kafka kafkaadmin.Config `yaml:"kafka"`

	// TopicConfigs: where retention settings come from when no cluster is
	// configured (offline), and how often they are refreshed from it.
	TopicConfigs topicConfigsConfig `yaml:"topicConfigs"`

	Enforcer  enforcer.Config `yaml:"enforcer"`
	Admission admissionConfig `yaml:"admission"`
	Web       webConfig       `yaml:"web"`
	Metrics   metricsConfig   `yaml:"metrics"`
	Log       logConfig       `yaml:"log"`
}

type topicConfigsConfig struct {
	// File is a topic-configs YAML file (defaults + per-topic overrides).
	File string `yaml:"file"`
	// RefreshInterval for configs read from the cluster. Default 5m.
	RefreshInterval time.Duration `yaml:"refreshInterval"`
}

type admissionConfig struct {
	// LimitPercent of storage that reserved space may take (default 90).
	LimitPercent float64 `yaml:"limitPercent"`
	// CompactFlatBytes reserved per compact-only partition (default 1 GiB).
	CompactFlatBytes int64 `yaml:"compactFlatBytes"`
	// BrokerStorageBytes: every broker's configured storage, instead of
	// its log dirs' total bytes.
	BrokerStorageBytes int64 `yaml:"brokerStorageBytes"`
}

type webConfig struct {
	ListenAddress string `yaml:"listenAddress"`
	// ConfigFile is an exporter-toolkit web config (TLS, basic auth).
	ConfigFile string `yaml:"configFile"`
}

type metricsConfig struct {
	PerPartition bool `yaml:"perPartition"`
}

type logConfig struct {
	Level  string `yaml:"level"`  // debug, info (default), warn, error
	Format string `yaml:"format"` // json (default) or text
}

// loadConfigFile reads and strictly decodes a configuration file.
func loadConfigFile(path string) (guardConfig, error) {
	var c guardConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	if err := decodeConfig(data, &c); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

func decodeConfig(data []byte, c *guardConfig) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

// validate checks every section; errors name the field.
func (c *guardConfig) validate() error {
	if err := c.Config.Validate(); err != nil {
		return err
	}
	if err := c.Kafka.Validate(); err != nil {
		return err
	}
	if c.TopicConfigs.RefreshInterval < 0 {
		return fmt.Errorf("topicConfigs.refreshInterval: must not be negative, got %s", c.TopicConfigs.RefreshInterval)
	}
	if c.TopicConfigs.RefreshInterval == 0 {
		c.TopicConfigs.RefreshInterval = 5 * time.Minute
	}
	c.Enforcer = c.Enforcer.WithDefaults()
	if err := c.Enforcer.Validate(); err != nil {
		return err // names the enforcer.* field itself
	}
	if c.Enforcer.Enabled && !c.Kafka.Enabled() {
		return errors.New("enforcer.enabled: enforcement acts through the broker and needs kafka.bootstrapServers")
	}
	switch strings.ToLower(c.Log.Level) {
	case "", "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level: %q is not debug, info, warn or error", c.Log.Level)
	}
	switch strings.ToLower(c.Log.Format) {
	case "", "json", "text":
	default:
		return fmt.Errorf("log.format: %q is not json or text", c.Log.Format)
	}
	return nil
}

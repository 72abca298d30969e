package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/exporter"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// guardConfig is the configuration file of `kafka-disk-guard run`
// (docs/configuration.md). Unknown keys are refused.
//
// The convention, the same in every package: each section's type has
// WithDefaults, the one place its defaults are set, and Validate, which
// checks the values after defaults and names the YAML path and the
// allowed values. Validate reads no file: files are read at start, and
// their errors name the key too.
type guardConfig struct {
	// The agent: logDirs, capacityBytes and the watcher's intervals.
	agent.Config `yaml:",inline"`

	Kafka kafkaadmin.Config `yaml:"kafka"`

	// TopicConfigs: where retention settings come from when no cluster is
	// configured (offline), and how often they are refreshed from it.
	TopicConfigs topicConfigsConfig `yaml:"topicConfigs"`

	Enforcer  enforcer.Config `yaml:"enforcer"`
	Admission reserve.Config  `yaml:"admission"`
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

func (c topicConfigsConfig) WithDefaults() topicConfigsConfig {
	if c.RefreshInterval == 0 {
		c.RefreshInterval = 5 * time.Minute
	}
	return c
}

func (c topicConfigsConfig) Validate() error {
	if c.RefreshInterval < 0 {
		return fmt.Errorf("topicConfigs.refreshInterval: %s is negative; want a duration > 0 (default 5m)", c.RefreshInterval)
	}
	return nil
}

type webConfig struct {
	ListenAddress string `yaml:"listenAddress"`
	// ConfigFile is an exporter-toolkit web config (TLS, basic auth).
	ConfigFile string `yaml:"configFile"`
	// ProbeListenAddress, when set, serves /healthz and /readyz on a
	// listener of their own, plain HTTP without authentication.
	ProbeListenAddress string `yaml:"probeListenAddress"`
}

func (c webConfig) WithDefaults() webConfig {
	if c.ListenAddress == "" {
		c.ListenAddress = exporter.DefaultListenAddress
	}
	return c
}

func (c webConfig) Validate() error {
	c = c.WithDefaults()
	return exporter.ServerConfig{ListenAddress: c.ListenAddress, WebConfigFile: c.ConfigFile, ProbeListenAddress: c.ProbeListenAddress}.Validate()
}

type metricsConfig struct {
	PerPartition bool `yaml:"perPartition"`
}

func (c metricsConfig) WithDefaults() metricsConfig { return c }
func (c metricsConfig) Validate() error             { return nil } // a bool: the decoder checks it

type logConfig struct {
	Level  string `yaml:"level"`  // debug, info (default), warn, error
	Format string `yaml:"format"` // json (default) or text
}

func (c logConfig) WithDefaults() logConfig {
	if c.Level == "" {
		c.Level = "info"
	}
	if c.Format == "" {
		c.Format = "json"
	}
	return c
}

func (c logConfig) Validate() error {
	c = c.WithDefaults()
	switch strings.ToLower(c.Level) {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("log.level: %q is not debug, info, warn or error", c.Level)
	}
	switch strings.ToLower(c.Format) {
	case "json", "text":
	default:
		return fmt.Errorf("log.format: %q is not json or text", c.Format)
	}
	return nil
}

// loadConfigFile reads and strictly decodes a configuration file.
func loadConfigFile(path string) (guardConfig, error) {
	var c guardConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	if err := decodeStrict(data, &c); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// WithDefaults applies every section's defaults.
func (c guardConfig) WithDefaults() guardConfig {
	c.Config = c.Config.WithDefaults()
	c.Kafka = c.Kafka.WithDefaults()
	c.TopicConfigs = c.TopicConfigs.WithDefaults()
	if c.Enforcer.Evidence.ConfigMaxAge == 0 {
		// A topic's configs may miss one refresh before it is held (R7.2).
		c.Enforcer.Evidence.ConfigMaxAge = 2 * c.TopicConfigs.RefreshInterval
	}
	c.Enforcer = c.Enforcer.WithDefaults()
	c.Admission = c.Admission.WithDefaults()
	if c.Admission.IsEnabled() && c.Kafka.Enabled() {
		// A log dir at the admission limit is cordoned too (spec R3.8).
		c.Enforcer.Relief.Cordon.AdmissionLimitPercent = c.Admission.LimitPercent
	}
	c.Web = c.Web.WithDefaults()
	c.Metrics = c.Metrics.WithDefaults()
	c.Log = c.Log.WithDefaults()
	return c
}

// Validate checks every section (after defaults); errors name the YAML
// path.
func (c guardConfig) Validate() error {
	for _, v := range []interface{ Validate() error }{c.Config, c.Kafka, c.TopicConfigs, c.Enforcer, c.Admission, c.Web, c.Metrics, c.Log} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	if c.Enforcer.Enabled && !c.Kafka.Enabled() {
		return errors.New("enforcer.enabled: enforcement acts through the broker and needs kafka.bootstrapServers")
	}
	if d := c.WithDefaults(); d.Enforcer.Evidence.ConfigMaxAge < d.TopicConfigs.RefreshInterval {
		return fmt.Errorf("enforcer.evidence.configMaxAge: %s is shorter than topicConfigs.refreshInterval (%s): every topic's configs would go stale between two refreshes (default: twice the refresh interval)",
			d.Enforcer.Evidence.ConfigMaxAge, d.TopicConfigs.RefreshInterval)
	}
	return nil
}

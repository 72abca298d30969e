// Package kafkaadmin is the one place that speaks to Kafka through Sarama.
// Its consumers (agent, enforcer, reserve) declare the interfaces they need;
// the adapters here implement them.
package kafkaadmin

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

// Config is how the guard connects to the cluster.
type Config struct {
	BootstrapServers []string   `yaml:"bootstrapServers"`
	ClientID         string     `yaml:"clientID"`
	SASL             SASLConfig `yaml:"sasl"`
	TLS              TLSConfig  `yaml:"tls"`
	// Timeout bounds each request. Default 10s.
	Timeout time.Duration `yaml:"timeout"`
}

// SASLConfig selects SASL authentication.
type SASLConfig struct {
	// Mechanism: "" (none), PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `yaml:"mechanism"`
	Username  string `yaml:"username"`
	Password  string `yaml:"password"`
	// PasswordFile is read at start (a mounted Secret); it wins over Password.
	PasswordFile string `yaml:"passwordFile"`
}

// TLSConfig enables TLS to the brokers.
type TLSConfig struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"caFile"`
	CertFile           string `yaml:"certFile"`
	KeyFile            string `yaml:"keyFile"`
	InsecureSkipVerify bool   `yaml:"insecureSkipVerify"`
}

// Enabled reports whether a cluster is configured at all.
func (c Config) Enabled() bool { return len(c.BootstrapServers) > 0 }

// Validate checks the configuration; errors name the field.
func (c *Config) Validate() error {
	for i, s := range c.BootstrapServers {
		if s == "" || !strings.Contains(s, ":") {
			return fmt.Errorf("kafka.bootstrapServers[%d]: %q is not host:port", i, s)
		}
	}
	switch strings.ToUpper(c.SASL.Mechanism) {
	case "":
	case sarama.SASLTypePlaintext, sarama.SASLTypeSCRAMSHA256, sarama.SASLTypeSCRAMSHA512:
		if c.SASL.Username == "" {
			return errors.New("kafka.sasl.username: required with a SASL mechanism")
		}
		if c.SASL.Password == "" && c.SASL.PasswordFile == "" {
			return errors.New("kafka.sasl.password: required (or kafka.sasl.passwordFile) with a SASL mechanism")
		}
	default:
		return fmt.Errorf("kafka.sasl.mechanism: %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.SASL.Mechanism)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		return errors.New("kafka.tls.certFile: certFile and keyFile go together")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("kafka.timeout: must not be negative, got %s", c.Timeout)
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.ClientID == "" {
		c.ClientID = "kafka-disk-guard"
	}
	return nil
}

// SaramaConfig builds the Sarama configuration, reading secret files.
func (c Config) SaramaConfig() (*sarama.Config, error) {
	sc := sarama.NewConfig()
	sc.Version = sarama.V3_0_0_0 // every request the guard uses; brokers 3.x and 4.x
	sc.ClientID = c.ClientID
	sc.Net.DialTimeout = c.Timeout
	sc.Net.ReadTimeout = c.Timeout
	sc.Net.WriteTimeout = c.Timeout
	sc.Admin.Timeout = c.Timeout
	sc.Metadata.Retry.Max = 2
	sc.Metadata.Retry.Backoff = 250 * time.Millisecond
	sc.Admin.Retry.Max = 2
	if m := strings.ToUpper(c.SASL.Mechanism); m != "" {
		pw := c.SASL.Password
		if c.SASL.PasswordFile != "" {
			b, err := os.ReadFile(c.SASL.PasswordFile)
			if err != nil {
				return nil, fmt.Errorf("kafka.sasl.passwordFile: %w", err)
			}
			pw = strings.TrimRight(string(b), "\r\n")
		}
		sc.Net.SASL.Enable = true
		sc.Net.SASL.Mechanism = sarama.SASLMechanism(m)
		sc.Net.SASL.User = c.SASL.Username
		sc.Net.SASL.Password = pw
		if m != sarama.SASLTypePlaintext {
			sc.Net.SASL.SCRAMClientGeneratorFunc = scramGenerator(m)
		}
	}
	if c.TLS.Enabled {
		tc := &tls.Config{InsecureSkipVerify: c.TLS.InsecureSkipVerify, MinVersion: tls.VersionTLS12} //nolint:gosec // operator's explicit choice
		if c.TLS.CAFile != "" {
			pem, err := os.ReadFile(c.TLS.CAFile)
			if err != nil {
				return nil, fmt.Errorf("kafka.tls.caFile: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("kafka.tls.caFile: no certificate in %s", c.TLS.CAFile)
			}
			tc.RootCAs = pool
		}
		if c.TLS.CertFile != "" {
			cert, err := tls.LoadX509KeyPair(c.TLS.CertFile, c.TLS.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("kafka.tls.certFile: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		sc.Net.TLS.Enable = true
		sc.Net.TLS.Config = tc
	}
	return sc, nil
}

// Connect opens a client and a cluster admin on it. Close the admin (it
// closes the client too).
func Connect(c Config) (sarama.Client, sarama.ClusterAdmin, error) {
	sc, err := c.SaramaConfig()
	if err != nil {
		return nil, nil, err
	}
	client, err := sarama.NewClient(c.BootstrapServers, sc)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", strings.Join(c.BootstrapServers, ","), err)
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("admin client: %w", err)
	}
	return client, admin, nil
}

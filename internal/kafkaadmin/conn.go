// Package kafkaadmin is the one place that speaks to Kafka through Sarama.
// Its consumers (agent, enforcer, reserve) declare the interfaces they need;
// the adapters here implement them.
package kafkaadmin

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
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
	// PasswordFile is read when connecting (a mounted Secret). Give one of
	// Password and PasswordFile.
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

// Defaults of the connection.
const (
	DefaultTimeout  = 10 * time.Second
	DefaultClientID = "kafka-disk-guard"
)

// WithDefaults returns c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	return c
}

// Validate checks the values (after defaults); errors name the YAML path
// under kafka: and the allowed values. Files are read when connecting.
func (c Config) Validate() error {
	c = c.WithDefaults()
	for i, s := range c.BootstrapServers {
		host, port, err := net.SplitHostPort(s)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("kafka.bootstrapServers[%d]: %q is not host:port", i, s)
		}
	}
	sasl := c.SASL
	switch strings.ToUpper(sasl.Mechanism) {
	case "":
		switch {
		case sasl.Username != "":
			return errors.New("kafka.sasl.username: set without kafka.sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		case sasl.Password != "" || sasl.PasswordFile != "":
			return errors.New("kafka.sasl.password: set without kafka.sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
		}
	case sarama.SASLTypePlaintext, sarama.SASLTypeSCRAMSHA256, sarama.SASLTypeSCRAMSHA512:
		if sasl.Username == "" {
			return errors.New("kafka.sasl.username: required with a SASL mechanism")
		}
		switch {
		case sasl.Password == "" && sasl.PasswordFile == "":
			return errors.New("kafka.sasl.passwordFile: required (or kafka.sasl.password, or the environment variable KDG_SASL_PASSWORD) with a SASL mechanism")
		case sasl.Password != "" && sasl.PasswordFile != "":
			return errors.New("kafka.sasl.passwordFile: set together with kafka.sasl.password; give one")
		}
	default:
		return fmt.Errorf("kafka.sasl.mechanism: %q is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", sasl.Mechanism)
	}
	t := c.TLS
	if (t.CertFile == "") != (t.KeyFile == "") {
		return errors.New("kafka.tls.certFile: kafka.tls.certFile and kafka.tls.keyFile go together")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("kafka.timeout: %s is negative; want a duration > 0 (default %s)", c.Timeout, DefaultTimeout)
	}
	return nil
}

// SaramaConfig builds the Sarama configuration, reading secret files.
func (c Config) SaramaConfig() (*sarama.Config, error) {
	c = c.WithDefaults()
	sc := sarama.NewConfig()
	// Kafka 3.3 or newer: DescribeLogDirs v4 reports each log dir's total
	// and usable bytes (KIP-827), which admission needs.
	sc.Version = sarama.V3_3_0_0
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

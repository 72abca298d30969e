package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
)

// kafkaFlags is the cluster connection's one set of flags and environment
// variables, registered by every subcommand that talks to Kafka (run,
// scan, reserve, demo). Kafka's own tool names where they exist
// (--bootstrap-server, --command-config). A password never comes from a
// flag (it would show in ps): from a file, the environment or the command
// config file.
type kafkaFlags struct {
	fs            *flag.FlagSet
	bootstrap     string
	commandConfig string
	mechanism     string
	username      string
	passwordFile  string
	tls           bool
	caFile        string
	certFile      string
	keyFile       string
}

// kafkaSettings lists each flag with its environment variable, in the
// order of the docs' table.
var kafkaSettings = []struct{ flag, env, yaml, help string }{
	{"bootstrap-server", "KDG_BOOTSTRAP_SERVERS", "kafka.bootstrapServers", "comma-separated Kafka bootstrap servers host:port"},
	{"command-config", "KDG_COMMAND_CONFIG", "", "Kafka client properties file (security.protocol, sasl.*, PEM ssl.*), as Kafka's tools take it"},
	{"sasl-mechanism", "KDG_SASL_MECHANISM", "kafka.sasl.mechanism", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
	{"sasl-username", "KDG_SASL_USERNAME", "kafka.sasl.username", "SASL user"},
	{"sasl-password-file", "KDG_SASL_PASSWORD_FILE", "kafka.sasl.passwordFile", "file holding the SASL password (or the environment variable KDG_SASL_PASSWORD)"},
	{"tls", "KDG_TLS", "kafka.tls.enabled", "connect with TLS"},
	{"tls-ca-file", "KDG_TLS_CA_FILE", "kafka.tls.caFile", "PEM CA bundle for the brokers' certificates (default: the system's)"},
	{"tls-cert-file", "KDG_TLS_CERT_FILE", "kafka.tls.certFile", "PEM client certificate (mutual TLS)"},
	{"tls-key-file", "KDG_TLS_KEY_FILE", "kafka.tls.keyFile", "PEM client key (mutual TLS)"},
}

// passwordEnv gives the SASL password itself.
const passwordEnv = "KDG_SASL_PASSWORD"

func (k *kafkaFlags) register(fs *flag.FlagSet) {
	k.fs = fs
	vars := map[string]*string{
		"bootstrap-server": &k.bootstrap, "command-config": &k.commandConfig, "sasl-mechanism": &k.mechanism,
		"sasl-username": &k.username, "sasl-password-file": &k.passwordFile, "tls-ca-file": &k.caFile,
		"tls-cert-file": &k.certFile, "tls-key-file": &k.keyFile,
	}
	for _, s := range kafkaSettings {
		help := s.help + " (env " + s.env + ")"
		if s.flag == "tls" {
			fs.BoolVar(&k.tls, s.flag, false, help)
			continue
		}
		fs.StringVar(vars[s.flag], s.flag, "", help)
	}
}

func (k *kafkaFlags) set(name string) bool {
	found := false
	k.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// apply merges the settings onto base (the configuration file's kafka
// section): the command config file, then the environment, then flags;
// the later wins.
func (k *kafkaFlags) apply(base kafkaadmin.Config, getenv env) (kafkaadmin.Config, error) {
	c := base
	pick := func(name, envName, flagValue string) (string, bool) {
		if k.set(name) {
			return flagValue, true
		}
		if v := getenv(envName); v != "" {
			return v, true
		}
		return "", false
	}
	if path, ok := pick("command-config", "KDG_COMMAND_CONFIG", k.commandConfig); ok {
		var err error
		if c, err = kafkaadmin.LoadClientProperties(c, path); err != nil {
			return c, err
		}
	}
	if v, ok := pick("bootstrap-server", "KDG_BOOTSTRAP_SERVERS", k.bootstrap); ok {
		c.BootstrapServers = splitList(v)
	}
	if v, ok := pick("sasl-mechanism", "KDG_SASL_MECHANISM", k.mechanism); ok {
		c.SASL.Mechanism = strings.ToUpper(v)
	}
	if v, ok := pick("sasl-username", "KDG_SASL_USERNAME", k.username); ok {
		c.SASL.Username = v
	}
	envPass, envFile := getenv(passwordEnv), getenv("KDG_SASL_PASSWORD_FILE")
	if envPass != "" && envFile != "" && !k.set("sasl-password-file") {
		return c, errors.New("KDG_SASL_PASSWORD and KDG_SASL_PASSWORD_FILE are both set: give one")
	}
	if envPass != "" {
		c.SASL.Password, c.SASL.PasswordFile = envPass, ""
	}
	if v, ok := pick("sasl-password-file", "KDG_SASL_PASSWORD_FILE", k.passwordFile); ok {
		c.SASL.Password, c.SASL.PasswordFile = "", v
	}
	if v, ok := pick("tls", "KDG_TLS", strconv.FormatBool(k.tls)); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("KDG_TLS: %q is not true or false", v)
		}
		c.TLS.Enabled = b
	}
	if v, ok := pick("tls-ca-file", "KDG_TLS_CA_FILE", k.caFile); ok {
		c.TLS.CAFile = v
	}
	if v, ok := pick("tls-cert-file", "KDG_TLS_CERT_FILE", k.certFile); ok {
		c.TLS.CertFile = v
	}
	if v, ok := pick("tls-key-file", "KDG_TLS_KEY_FILE", k.keyFile); ok {
		c.TLS.KeyFile = v
	}
	return c, nil
}

// rejectPasswordFlag refuses a password given as a flag, before the flag
// package says only "flag provided but not defined".
func rejectPasswordFlag(args []string) error {
	for _, a := range args {
		if a == "--" {
			return nil
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "sasl-password" {
			return usageError{"--sasl-password is not accepted: a password on the command line shows in ps; use --sasl-password-file FILE or the environment variable " + passwordEnv}
		}
	}
	return nil
}

// flagName maps a kafka.* YAML path in an error to the flag that sets it,
// for subcommands without a configuration file.
func flagName(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, s := range kafkaSettings {
		if s.yaml != "" {
			msg = strings.ReplaceAll(msg, s.yaml, "--"+s.flag)
		}
	}
	return errors.New(msg)
}

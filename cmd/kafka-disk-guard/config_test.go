package main

import (
	"errors"
	"io"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// leafPaths lists every YAML path of a leaf (a value that is not a
// mapping) of type t, with its type; lists and maps of structs are
// entered at index 0.
func leafPaths(t reflect.Type, prefix string, out map[string]reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Struct && t != reflect.TypeOf(time.Time{}):
		for k, ft := range yamlFields(t) {
			leafPaths(ft, join(prefix, k), out)
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		leafPaths(t.Elem(), prefix+"[0]", out)
	default:
		out[prefix] = t
	}
}

// yamlAt builds a YAML document that sets path to value.
func yamlAt(path, value string) string {
	var b strings.Builder
	parts := strings.Split(path, ".")
	indent := ""
	for i, p := range parts {
		name, list := strings.CutSuffix(p, "[0]")
		if i == len(parts)-1 {
			if list {
				b.WriteString(indent + name + ":\n" + indent + "  - " + value + "\n")
			} else {
				b.WriteString(indent + name + ": " + value + "\n")
			}
			break
		}
		b.WriteString(indent + name + ":\n")
		indent += "  "
		if list {
			b.WriteString(indent + "- ")
			// The list item's keys follow on the same and next lines.
			rest := yamlAt(strings.Join(parts[i+1:], "."), value)
			lines := strings.Split(strings.TrimSuffix(rest, "\n"), "\n")
			b.WriteString(lines[0] + "\n")
			for _, l := range lines[1:] {
				b.WriteString(indent + "  " + l + "\n")
			}
			return b.String()
		}
	}
	return b.String()
}

// R6: every key of the configuration file, given a value of the wrong
// kind, is refused naming its YAML path (never a Go type). The list of
// keys comes from the types, so a key added later is covered too.
func TestEveryKeyWithAWrongKindOfValueIsNamed(t *testing.T) {
	paths := map[string]reflect.Type{}
	leafPaths(reflect.TypeOf(guardConfig{}), "", paths)
	if len(paths) < 40 {
		t.Fatalf("only %d keys found", len(paths))
	}
	var names []string
	for p := range paths {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		t.Run(p, func(t *testing.T) {
			body := yamlAt(p, "{not: a value of this kind}")
			var c guardConfig
			err := decodeStrict([]byte(body), &c)
			if err == nil || !strings.Contains(err.Error(), p+":") {
				t.Fatalf("%s\ngot %v, want an error naming %s", body, err, p)
			}
			if strings.Contains(err.Error(), "kafkaadmin.") || strings.Contains(err.Error(), "enforcer.Config") {
				t.Errorf("error names a Go type: %v", err)
			}
		})
	}
}

// R6: a value of the right kind but outside what the key allows is
// refused at start and by check-config, naming the YAML path and the
// allowed values. One case per key that constrains its value.
func TestEveryKeyWithABadValueIsNamed(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"logDirs: []", "logDirs: at least one"},
		{"logDirs: [/a, /a/]", "logDirs[1]"},
		{"logDirs: ['/pods/[']", "logDirs[0]: bad glob"},
		{"debounce: -1s", "debounce: -1s is negative"},
		{"growthInterval: -1s", "growthInterval"},
		{"usageInterval: -1s", "usageInterval"},
		{"reclassifyInterval: -1s", "reclassifyInterval"},
		{"resyncInterval: -1s", "resyncInterval"},
		{"pollInterval: -1s", "pollInterval"},
		{"capacityBytes: -5", "capacityBytes: \"-5\" is not a non-negative integer"},
		{"kafka: {bootstrapServers: [nohost]}", "kafka.bootstrapServers[0]: \"nohost\" is not host:port"},
		{"kafka: {bootstrapServers: ['k:99999']}", "kafka.bootstrapServers[0]"},
		{"kafka: {bootstrapServers: [k:1], sasl: {mechanism: GSSAPI, username: u, password: p}}", "kafka.sasl.mechanism: \"GSSAPI\" is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"},
		{"kafka: {bootstrapServers: [k:1], sasl: {mechanism: PLAIN, password: p}}", "kafka.sasl.username: required"},
		{"kafka: {bootstrapServers: [k:1], sasl: {mechanism: PLAIN, username: u}}", "kafka.sasl.passwordFile: required"},
		{"kafka: {bootstrapServers: [k:1], sasl: {mechanism: PLAIN, username: u, password: p, passwordFile: /f}}", "kafka.sasl.passwordFile: set together with kafka.sasl.password"},
		{"kafka: {bootstrapServers: [k:1], sasl: {username: u}}", "kafka.sasl.username: set without kafka.sasl.mechanism"},
		{"kafka: {bootstrapServers: [k:1], sasl: {enabled: true, mechanism: PLAIN}}", "kafka.sasl.enabled: unknown key (allowed under kafka.sasl: mechanism, password, passwordFile, username)"},
		{"kafka: {bootstrapServers: [k:1], tls: {enabled: true, certFile: /c}}", "kafka.tls.certFile: kafka.tls.certFile and kafka.tls.keyFile go together"},
		{"kafka: {bootstrapServers: [k:1], timeout: -1s}", "kafka.timeout: -1s is negative"},
		{"topicConfigs: {refreshInterval: -1m}", "topicConfigs.refreshInterval: -1m0s is negative"},
		{"enforcer: {profile: huge}", "enforcer.profile: \"huge\" is not one of cloud, local, serverless, custom"},
		{"enforcer: {enabled: true}", "enforcer.enabled: enforcement acts through the broker"},
		{"enforcer: {bands: [{from: 0, action: none}]}", "enforcer.bands: only allowed with profile"},
		{"enforcer: {schedule: {time: '25:00'}}", "enforcer.schedule.time"},
		{"enforcer: {schedule: {timezone: Mars/Olympus}}", "enforcer.schedule.timezone"},
		{"enforcer: {hysteresisPoints: 100}", "enforcer.hysteresisPoints"},
		{"enforcer: {protection: {strategy: pray}}", "enforcer.protection.strategy"},
		{"enforcer: {protection: {producerByteRate: -1}}", "enforcer.protection.producerByteRate"},
		{"enforcer: {maxActionsPerInterval: -1}", "enforcer.maxActionsPerInterval"},
		{"enforcer: {interval: -1s}", "enforcer.interval"},
		{"enforcer: {staleAfter: -1s}", "enforcer.staleAfter"},
		{"enforcer: {ownershipTopic: 'a b'}", "enforcer.ownershipTopic"},
		{"enforcer: {evidence: {identityInterval: -1s}}", "enforcer.evidence.identityInterval: -1s is negative"},
		{"enforcer: {evidence: {rightsInterval: -1s}}", "enforcer.evidence.rightsInterval"},
		{"enforcer: {evidence: {configMaxAge: -1s}}", "enforcer.evidence.configMaxAge: -1s is negative"},
		{"topicConfigs: {refreshInterval: 5m}\nenforcer: {evidence: {configMaxAge: 3m}}", "enforcer.evidence.configMaxAge: 3m0s is shorter than topicConfigs.refreshInterval (5m0s)"},
		{"enforcer: {evidence: {clockJumpTolerance: -1s}}", "enforcer.evidence.clockJumpTolerance"},
		{"enforcer: {evidence: {clockJumpHold: -1s}}", "enforcer.evidence.clockJumpHold"},
		{"enforcer: {evidence: {futureTolerance: -1s}}", "enforcer.evidence.futureTolerance"},
		{"enforcer: {purge: {maxPercentPerPass: 101}}", "enforcer.purge.maxPercentPerPass: 101 is outside (0, 100]"},
		{"enforcer: {purge: {maxPercentPerHour: -1}}", "enforcer.purge.maxPercentPerHour"},
		{"enforcer: {purge: {maxPercentPerDay: 200}}", "enforcer.purge.maxPercentPerDay"},
		{"enforcer: {purge: {floorSegments: -1}}", "enforcer.purge.floorSegments: -1 is negative"},
		{"enforcer: {purge: {floorPercent: 100}}", "enforcer.purge.floorPercent: 100 is outside (0, 99]"},
		{"enforcer: {purge: {otherBytesPercent: -5}}", "enforcer.purge.otherBytesPercent"},
		{"admission: {limitPercent: 150}", "admission.limitPercent: 150 is outside (0, 100]"},
		{"admission: {limitPercent: -1}", "admission.limitPercent"},
		{"admission: {compactFlatBytes: -1}", "admission.compactFlatBytes: -1 is negative"},
		{"admission: {brokerStorageBytes: -1}", "admission.brokerStorageBytes: -1 is negative"},
		{"admission: {refreshInterval: -1s}", "admission.refreshInterval"},
		{"admission: {refreshInterval: 5m, maxModelAge: 1m}", "admission.maxModelAge: 1m0s must be longer than admission.refreshInterval"},
		{"admission: {maxConcurrentChecks: -1}", "admission.maxConcurrentChecks"},
		{"web: {listenAddress: '9644'}", "web.listenAddress: \"9644\" is not host:port"},
		{"web: {probeListenAddress: '9645'}", "web.probeListenAddress: \"9645\" is not host:port"},
		{"web: {listenAddress: ':9644', probeListenAddress: ':9644'}", "web.probeListenAddress: \":9644\" is web.listenAddress too"},
		{"metrics: {perPartition: maybe}", "metrics.perPartition: \"maybe\" is not true or false"},
		{"log: {level: loud}", "log.level: \"loud\" is not debug, info, warn or error"},
		{"log: {format: xml}", "log.format: \"xml\" is not json or text"},
		{"admision: {limitPercent: 50}", "admision: unknown key (allowed under the top level: admission,"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			body := tc.body
			if !strings.HasPrefix(body, "logDirs") {
				body = "logDirs: [/d]\n" + body
			}
			file := writeFile(t, "guard.yaml", body)
			for _, check := range []func() error{
				func() error {
					_, err := parseRunConfig([]string{"--config", file}, mapEnv(nil), io.Discard)
					return err
				},
				func() error { return runCheckConfig(t.Context(), []string{file}, nil, streams{io.Discard, io.Discard}) },
			} {
				err := check()
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("%s\ngot %v, want an error containing %q", body, err, tc.want)
				}
			}
		})
	}
}

// The file, then the environment, then flags, for the connection too;
// --command-config reads Kafka's client properties; a password is never a
// flag.
func TestKafkaFlags(t *testing.T) {
	props := writeFile(t, "client.properties", `# as for kafka-topics.sh --command-config
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
    username="guard" password="s3cr=t";
ssl.truststore.type=PEM
ssl.truststore.location=/etc/kafka/ca.pem
`)
	file := writeFile(t, "guard.yaml", "logDirs: [/d]\nkafka: {bootstrapServers: [file:9092], sasl: {mechanism: PLAIN, username: fileuser, passwordFile: /file/pw}}\n")
	for _, tc := range []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, c guardConfig)
	}{
		{"file only", nil, nil, func(t *testing.T, c guardConfig) {
			if c.Kafka.SASL.Username != "fileuser" || c.Kafka.SASL.PasswordFile != "/file/pw" || c.Kafka.BootstrapServers[0] != "file:9092" {
				t.Errorf("%+v", c.Kafka)
			}
		}},
		{"env over file", nil, map[string]string{"KDG_SASL_USERNAME": "envuser", "KDG_SASL_PASSWORD": "envpw", "KDG_BOOTSTRAP_SERVERS": "env:9092"}, func(t *testing.T, c guardConfig) {
			if c.Kafka.SASL.Username != "envuser" || c.Kafka.SASL.Password != "envpw" || c.Kafka.SASL.PasswordFile != "" || c.Kafka.BootstrapServers[0] != "env:9092" {
				t.Errorf("%+v", c.Kafka)
			}
		}},
		{"flag over env", []string{"--sasl-username", "flaguser", "--sasl-password-file", "/flag/pw"}, map[string]string{"KDG_SASL_USERNAME": "envuser", "KDG_SASL_PASSWORD": "envpw"}, func(t *testing.T, c guardConfig) {
			if c.Kafka.SASL.Username != "flaguser" || c.Kafka.SASL.PasswordFile != "/flag/pw" || c.Kafka.SASL.Password != "" {
				t.Errorf("%+v", c.Kafka)
			}
		}},
		{"command config", []string{"--command-config", props}, nil, func(t *testing.T, c guardConfig) {
			k := c.Kafka
			if k.SASL.Mechanism != "SCRAM-SHA-512" || k.SASL.Username != "guard" || k.SASL.Password != "s3cr=t" || k.SASL.PasswordFile != "" ||
				!k.TLS.Enabled || k.TLS.CAFile != "/etc/kafka/ca.pem" {
				t.Errorf("%+v", k)
			}
		}},
		{"flags over command config", []string{"--command-config", props, "--sasl-username", "other", "--bootstrap-server", "a:1,b:2"}, nil, func(t *testing.T, c guardConfig) {
			if c.Kafka.SASL.Username != "other" || c.Kafka.SASL.Password != "s3cr=t" || len(c.Kafka.BootstrapServers) != 2 {
				t.Errorf("%+v", c.Kafka)
			}
		}},
		{"tls from env", nil, map[string]string{"KDG_TLS": "true", "KDG_TLS_CA_FILE": "/ca"}, func(t *testing.T, c guardConfig) {
			if !c.Kafka.TLS.Enabled || c.Kafka.TLS.CAFile != "/ca" {
				t.Errorf("%+v", c.Kafka.TLS)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseRunConfig(append([]string{"--config", file}, tc.args...), mapEnv(tc.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"password flag", []string{"--sasl-password", "x"}, nil, "--sasl-password is not accepted: a password on the command line shows in ps"},
		{"password flag with =", []string{"-sasl-password=x"}, nil, "--sasl-password is not accepted"},
		{"both password envs", nil, map[string]string{"KDG_SASL_PASSWORD": "a", "KDG_SASL_PASSWORD_FILE": "/b"}, "give one"},
		{"bad KDG_TLS", nil, map[string]string{"KDG_TLS": "yes please"}, "KDG_TLS"},
		{"old env prefix is not read", nil, map[string]string{"KAFKA_DISK_GUARD_SASL_PASSWORD": "x", "KDG_SASL_MECHANISM": "PLAIN", "KDG_SASL_USERNAME": "u", "KDG_BOOTSTRAP_SERVERS": "k:1"}, "kafka.sasl.passwordFile: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRunConfig(append([]string{"--log-dirs", "/d"}, tc.args...), mapEnv(tc.env), io.Discard)
			var ue usageError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ue) {
				t.Fatalf("got %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
}

// TestAdmissionLimitIsACordonBound: with admission on, its limit reaches
// the enforcer's cordon config (spec R3.8: a log dir at the admission
// limit is cordoned); without a cluster or with admission off, it does not.
func TestAdmissionLimitIsACordonBound(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want float64
	}{
		{"kafka:\n  bootstrapServers: [\"k:9092\"]\nadmission:\n  limitPercent: 70\n", 70},
		{"kafka:\n  bootstrapServers: [\"k:9092\"]\n", 90},
		{"kafka:\n  bootstrapServers: [\"k:9092\"]\nadmission:\n  enabled: false\n  limitPercent: 70\n", 0},
		{"admission:\n  limitPercent: 70\n", 0},
	} {
		var c guardConfig
		if err := decodeStrict([]byte(tc.doc), &c); err != nil {
			t.Fatal(err)
		}
		if got := c.WithDefaults().Enforcer.Relief.Cordon.AdmissionLimitPercent; got != tc.want {
			t.Errorf("%q: AdmissionLimitPercent = %v, want %v", tc.doc, got, tc.want)
		}
	}
}

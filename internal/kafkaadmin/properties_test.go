package kafkaadmin

import (
	"strings"
	"testing"
	"time"
)

// A Kafka client properties file (--command-config): what the guard
// supports becomes its connection settings; anything else is refused
// naming the key.
func TestClientProperties(t *testing.T) {
	for _, tc := range []struct {
		name, props string
		want        Config
		err         string
	}{
		{name: "plaintext", props: "bootstrap.servers=a:9092, b:9092\nclient.id=me\nrequest.timeout.ms=5000\n",
			want: Config{BootstrapServers: []string{"a:9092", "b:9092"}, ClientID: "me", Timeout: 5 * time.Second}},
		{name: "sasl plain", props: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" +
			`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p\"w";` + "\n",
			want: Config{SASL: SASLConfig{Mechanism: "PLAIN", Username: "u", Password: `p"w`}}},
		{name: "scram over tls, pem stores, comments and continuation", props: "# a comment\n! another\nsecurity.protocol : SASL_SSL\n" +
			"sasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n  username=guard \\\n  password=\"x y\";\n" +
			"ssl.truststore.type=PEM\nssl.truststore.location=/ca.pem\nssl.keystore.type=PEM\nssl.keystore.location=/me.pem\nssl.endpoint.identification.algorithm=https\n",
			want: Config{SASL: SASLConfig{Mechanism: "SCRAM-SHA-256", Username: "guard", Password: "x y"},
				TLS: TLSConfig{Enabled: true, CAFile: "/ca.pem", CertFile: "/me.pem", KeyFile: "/me.pem"}}},
		{name: "ssl only", props: "security.protocol=SSL\n", want: Config{TLS: TLSConfig{Enabled: true}}},
		{name: "unknown key", props: "security.protocol=SSL\nssl.truststore.password=x\n", err: "ssl.truststore.password: not supported (supported: bootstrap.servers,"},
		{name: "gssapi", props: "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=GSSAPI\nsasl.jaas.config=x required;\n", err: `sasl.mechanism: "GSSAPI" is not supported`},
		{name: "no mechanism", props: "security.protocol=SASL_SSL\nsasl.jaas.config=x required;\n", err: "sasl.mechanism: required with security.protocol SASL_SSL (Kafka's default, GSSAPI, is not supported"},
		{name: "wrong module", props: "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=a password=b;\n",
			err: "sasl.jaas.config: login module org.apache.kafka.common.security.scram.ScramLoginModule is not supported with sasl.mechanism PLAIN"},
		{name: "oauth module option", props: "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=a password=b unsecuredLoginStringClaim_sub=x;\n",
			err: "sasl.jaas.config: option unsecuredLoginStringClaim_sub is not supported"},
		{name: "no password", props: "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=a;\n",
			err: "sasl.jaas.config: username and password are required"},
		{name: "jks truststore", props: "security.protocol=SSL\nssl.truststore.location=/ts.jks\n", err: "ssl.truststore.location: needs ssl.truststore.type=PEM"},
		{name: "jks type", props: "security.protocol=SSL\nssl.truststore.type=JKS\n", err: `ssl.truststore.type: "JKS" is not supported`},
		{name: "no hostname check", props: "security.protocol=SSL\nssl.endpoint.identification.algorithm=\n", err: "ssl.endpoint.identification.algorithm"},
		{name: "ssl key without tls", props: "ssl.truststore.type=PEM\n", err: "ssl.truststore.type: set, but security.protocol is PLAINTEXT (the default)"},
		{name: "bad protocol", props: "security.protocol=TLS\n", err: `security.protocol: "TLS" is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL`},
		{name: "not key=value", props: "just words\n", err: "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseProperties(strings.NewReader(tc.props))
			var c Config
			if err == nil {
				c, err = applyClientProperties(Config{}, p)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.ClientID != tc.want.ClientID || c.Timeout != tc.want.Timeout || c.SASL != tc.want.SASL || c.TLS != tc.want.TLS ||
				strings.Join(c.BootstrapServers, ",") != strings.Join(tc.want.BootstrapServers, ",") {
				t.Fatalf("got %+v\nwant %+v", c, tc.want)
			}
		})
	}
}

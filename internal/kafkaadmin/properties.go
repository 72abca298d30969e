package kafkaadmin

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SupportedClientProperties are the keys of a Kafka client properties file
// (--command-config, as Kafka's own tools take it) that the guard reads.
// Every other key is refused, naming it.
var SupportedClientProperties = []string{
	"bootstrap.servers", "client.id", "request.timeout.ms", "security.protocol",
	"sasl.mechanism", "sasl.jaas.config",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.keystore.type", "ssl.keystore.location",
	"ssl.endpoint.identification.algorithm",
}

// LoadClientProperties applies a Kafka client properties file to c:
// security.protocol PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL;
// sasl.mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 with a
// sasl.jaas.config of PlainLoginModule or ScramLoginModule giving username
// and password; PEM trust and key stores (ssl.truststore.type=PEM with
// ssl.truststore.location, ssl.keystore.type=PEM with ssl.keystore.location
// holding the certificate chain and an unencrypted key). Errors name the
// file and the key.
func LoadClientProperties(c Config, path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return c, fmt.Errorf("command config: %w", err)
	}
	defer f.Close()
	props, err := parseProperties(f)
	if err != nil {
		return c, fmt.Errorf("command config %s: %w", path, err)
	}
	c, err = applyClientProperties(c, props)
	if err != nil {
		return c, fmt.Errorf("command config %s: %w", path, err)
	}
	return c, nil
}

// parseProperties reads Java properties: key=value or key: value, # and !
// comments, a trailing backslash continues the line.
func parseProperties(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var logical strings.Builder
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if logical.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") {
			logical.WriteString(strings.TrimSuffix(line, "\\"))
			continue
		}
		logical.WriteString(line)
		l := logical.String()
		logical.Reset()
		i := strings.IndexAny(l, "=:")
		if i < 0 {
			return nil, fmt.Errorf("line %d: %q is not key=value", n, l)
		}
		k := strings.TrimSpace(l[:i])
		v := strings.TrimSpace(l[i+1:])
		v = strings.NewReplacer(`\\`, `\`, `\=`, `=`, `\:`, `:`, `\ `, ` `).Replace(v)
		out[k] = v
	}
	return out, sc.Err()
}

var jaasRe = regexp.MustCompile(`^\s*(\S+)\s+required\s*(.*?)\s*;?\s*$`)
var jaasOptRe = regexp.MustCompile(`(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+))`)

// applyClientProperties applies a Kafka client properties file's
// supported keys to c.
func applyClientProperties(c Config, p map[string]string) (Config, error) {
	for k := range p {
		if !slices.Contains(SupportedClientProperties, k) {
			return c, fmt.Errorf("%s: not supported (supported: %s)", k, strings.Join(SupportedClientProperties, ", "))
		}
	}
	if v, ok := p["bootstrap.servers"]; ok {
		c.BootstrapServers = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.BootstrapServers = append(c.BootstrapServers, s)
			}
		}
	}
	if v, ok := p["client.id"]; ok {
		c.ClientID = v
	}
	if v, ok := p["request.timeout.ms"]; ok {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return c, fmt.Errorf("request.timeout.ms: %q is not a positive number of milliseconds", v)
		}
		c.Timeout = time.Duration(ms) * time.Millisecond
	}
	protocol := strings.ToUpper(p["security.protocol"])
	sasl, tls := false, false
	switch protocol {
	case "", "PLAINTEXT":
	case "SSL":
		tls = true
	case "SASL_PLAINTEXT":
		sasl = true
	case "SASL_SSL":
		sasl, tls = true, true
	default:
		return c, fmt.Errorf("security.protocol: %q is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", p["security.protocol"])
	}
	if _, ok := p["security.protocol"]; ok {
		// The file describes the connection: what it does not enable is off.
		c.TLS.Enabled = tls
		if !sasl {
			c.SASL = SASLConfig{}
		}
	}
	if sasl {
		s, err := saslProperties(p, protocol)
		if err != nil {
			return c, err
		}
		c.SASL = s
	} else if err := notSet(p, protocol, "sasl.mechanism", "sasl.jaas.config"); err != nil {
		return c, err
	}
	if tls {
		c.TLS.Enabled = true
		return c, tlsProperties(&c.TLS, p)
	}
	return c, notSet(p, protocol, "ssl.truststore.type", "ssl.truststore.location", "ssl.keystore.type", "ssl.keystore.location", "ssl.endpoint.identification.algorithm")
}

// notSet fails on the first of keys the properties set that the security
// protocol does not use.
func notSet(p map[string]string, protocol string, keys ...string) error {
	for _, k := range keys {
		if _, ok := p[k]; ok {
			return fmt.Errorf("%s: set, but security.protocol is %s", k, orPlaintext(protocol))
		}
	}
	return nil
}

// saslProperties reads the SASL mechanism and the JAAS login module's
// username and password.
func saslProperties(p map[string]string, protocol string) (SASLConfig, error) {
	mech := strings.ToUpper(p["sasl.mechanism"])
	switch mech {
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
	case "":
		return SASLConfig{}, fmt.Errorf("sasl.mechanism: required with security.protocol %s (Kafka's default, GSSAPI, is not supported; PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", protocol)
	default:
		return SASLConfig{}, fmt.Errorf("sasl.mechanism: %q is not supported (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", p["sasl.mechanism"])
	}
	jaas, ok := p["sasl.jaas.config"]
	if !ok {
		return SASLConfig{}, fmt.Errorf("sasl.jaas.config: required with security.protocol %s", protocol)
	}
	m := jaasRe.FindStringSubmatch(jaas)
	if m == nil {
		return SASLConfig{}, fmt.Errorf("sasl.jaas.config: not '<LoginModule> required username=\"...\" password=\"...\";'")
	}
	module := m[1]
	wantModule := "org.apache.kafka.common.security.scram.ScramLoginModule"
	if mech == "PLAIN" {
		wantModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	if module != wantModule {
		return SASLConfig{}, fmt.Errorf("sasl.jaas.config: login module %s is not supported with sasl.mechanism %s (want %s)", module, mech, wantModule)
	}
	opts := map[string]string{}
	for _, o := range jaasOptRe.FindAllStringSubmatch(m[2], -1) {
		v := o[3]
		if o[3] == "" {
			v = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(o[2])
		}
		opts[o[1]] = v
	}
	for k := range opts {
		if k != "username" && k != "password" {
			return SASLConfig{}, fmt.Errorf("sasl.jaas.config: option %s is not supported (username, password)", k)
		}
	}
	if opts["username"] == "" || opts["password"] == "" {
		return SASLConfig{}, fmt.Errorf("sasl.jaas.config: username and password are required")
	}
	return SASLConfig{Mechanism: mech, Username: opts["username"], Password: opts["password"]}, nil
}

// tlsProperties reads the PEM trust and key stores and checks the host
// name verification.
func tlsProperties(t *TLSConfig, p map[string]string) error {
	if typ, ok := p["ssl.truststore.type"]; ok && !strings.EqualFold(typ, "PEM") {
		return fmt.Errorf("ssl.truststore.type: %q is not supported (PEM; convert a JKS or PKCS12 store with keytool and openssl)", typ)
	}
	if loc, ok := p["ssl.truststore.location"]; ok {
		if !strings.EqualFold(p["ssl.truststore.type"], "PEM") {
			return fmt.Errorf("ssl.truststore.location: needs ssl.truststore.type=PEM (JKS and PKCS12 are not supported)")
		}
		t.CAFile = loc
	}
	if typ, ok := p["ssl.keystore.type"]; ok && !strings.EqualFold(typ, "PEM") {
		return fmt.Errorf("ssl.keystore.type: %q is not supported (PEM)", typ)
	}
	if loc, ok := p["ssl.keystore.location"]; ok {
		if !strings.EqualFold(p["ssl.keystore.type"], "PEM") {
			return fmt.Errorf("ssl.keystore.location: needs ssl.keystore.type=PEM (JKS and PKCS12 are not supported)")
		}
		t.CertFile, t.KeyFile = loc, loc
	}
	if v, ok := p["ssl.endpoint.identification.algorithm"]; ok && !strings.EqualFold(v, "https") {
		return fmt.Errorf("ssl.endpoint.identification.algorithm: %q is not supported (https: the broker's host name is always verified)", v)
	}
	return nil
}

func orPlaintext(p string) string {
	if p == "" {
		return "PLAINTEXT (the default)"
	}
	return p
}

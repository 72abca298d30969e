package kafkaadmin

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
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

func applyClientProperties(c Config, p map[string]string) (Config, error) {
	for k := range p {
		supported := false
		for _, s := range SupportedClientProperties {
			supported = supported || k == s
		}
		if !supported {
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
		mech := strings.ToUpper(p["sasl.mechanism"])
		switch mech {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		case "":
			return c, fmt.Errorf("sasl.mechanism: required with security.protocol %s (Kafka's default, GSSAPI, is not supported; PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", protocol)
		default:
			return c, fmt.Errorf("sasl.mechanism: %q is not supported (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", p["sasl.mechanism"])
		}
		jaas, ok := p["sasl.jaas.config"]
		if !ok {
			return c, fmt.Errorf("sasl.jaas.config: required with security.protocol %s", protocol)
		}
		m := jaasRe.FindStringSubmatch(jaas)
		if m == nil {
			return c, fmt.Errorf("sasl.jaas.config: not '<LoginModule> required username=\"...\" password=\"...\";'")
		}
		module := m[1]
		wantModule := "org.apache.kafka.common.security.scram.ScramLoginModule"
		if mech == "PLAIN" {
			wantModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
		}
		if module != wantModule {
			return c, fmt.Errorf("sasl.jaas.config: login module %s is not supported with sasl.mechanism %s (want %s)", module, mech, wantModule)
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
				return c, fmt.Errorf("sasl.jaas.config: option %s is not supported (username, password)", k)
			}
		}
		if opts["username"] == "" || opts["password"] == "" {
			return c, fmt.Errorf("sasl.jaas.config: username and password are required")
		}
		c.SASL = SASLConfig{Mechanism: mech, Username: opts["username"], Password: opts["password"]}
	} else {
		for _, k := range []string{"sasl.mechanism", "sasl.jaas.config"} {
			if _, ok := p[k]; ok {
				return c, fmt.Errorf("%s: set, but security.protocol is %s", k, orPlaintext(protocol))
			}
		}
	}
	if tls {
		c.TLS.Enabled = true
		if t, ok := p["ssl.truststore.type"]; ok && !strings.EqualFold(t, "PEM") {
			return c, fmt.Errorf("ssl.truststore.type: %q is not supported (PEM; convert a JKS or PKCS12 store with keytool and openssl)", t)
		}
		if loc, ok := p["ssl.truststore.location"]; ok {
			if !strings.EqualFold(p["ssl.truststore.type"], "PEM") {
				return c, fmt.Errorf("ssl.truststore.location: needs ssl.truststore.type=PEM (JKS and PKCS12 are not supported)")
			}
			c.TLS.CAFile = loc
		}
		if t, ok := p["ssl.keystore.type"]; ok && !strings.EqualFold(t, "PEM") {
			return c, fmt.Errorf("ssl.keystore.type: %q is not supported (PEM)", t)
		}
		if loc, ok := p["ssl.keystore.location"]; ok {
			if !strings.EqualFold(p["ssl.keystore.type"], "PEM") {
				return c, fmt.Errorf("ssl.keystore.location: needs ssl.keystore.type=PEM (JKS and PKCS12 are not supported)")
			}
			c.TLS.CertFile, c.TLS.KeyFile = loc, loc
		}
		if v, ok := p["ssl.endpoint.identification.algorithm"]; ok && !strings.EqualFold(v, "https") {
			return c, fmt.Errorf("ssl.endpoint.identification.algorithm: %q is not supported (https: the broker's host name is always verified)", v)
		}
	} else {
		for _, k := range []string{"ssl.truststore.type", "ssl.truststore.location", "ssl.keystore.type", "ssl.keystore.location", "ssl.endpoint.identification.algorithm"} {
			if _, ok := p[k]; ok {
				return c, fmt.Errorf("%s: set, but security.protocol is %s", k, orPlaintext(protocol))
			}
		}
	}
	return c, nil
}

func orPlaintext(p string) string {
	if p == "" {
		return "PLAINTEXT (the default)"
	}
	return p
}

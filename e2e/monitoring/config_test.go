//go:build integration

package monitoring_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// forScale shortens the rules' `for:` in the test: one minute of the
// shipped rules is one second here (10m -> 10s), the scale of the test's
// 1 s scrape and evaluation intervals. Only the test's generated copy is
// changed; the shipped file is what the chart and users load.
const forScale = 60

// testRules generates the rule file Prometheus loads from the shipped
// alerts/kafka-disk-guard.rules.yml, at run time: the band groups of other
// profiles are left out (as the chart and docs/operating.md do) and every
// `for:` is divided by forScale. Nothing else changes.
func testRules(t *testing.T, root, dir, profile string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "alerts", "kafka-disk-guard.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	groups := mapValue(doc.Content[0], "groups")
	if groups == nil || groups.Kind != yaml.SequenceNode {
		t.Fatal("the rules file has no groups")
	}
	var kept []*yaml.Node
	for _, g := range groups.Content {
		name := mapValue(g, "name").Value
		if strings.HasPrefix(name, "kafka-disk-guard.bands.") && name != "kafka-disk-guard.bands."+profile {
			continue
		}
		for _, r := range mapValue(g, "rules").Content {
			f := mapValue(r, "for")
			if f == nil {
				continue
			}
			d, err := time.ParseDuration(f.Value)
			if err != nil {
				t.Fatalf("rule %s: for %q: %v", mapValue(r, "alert").Value, f.Value, err)
			}
			f.Value = fmt.Sprintf("%ds", int(d.Seconds())/forScale)
		}
		kept = append(kept, g)
	}
	groups.Content = kept
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kafka-disk-guard.rules.yml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// mapValue returns the value node of key in a mapping node, nil if absent.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// prometheusConfig scrapes the guard every second as job kafka-disk-guard
// (the name the agent-down alert expects) with the `cluster` target label
// the chart's monitors add, evaluates the rules every second and sends
// alerts to the Alertmanager.
func prometheusConfig(guard, alertmanager, rules, cluster string) string {
	return fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [%q]
alerting:
  alertmanagers:
    - static_configs:
        - targets: [%q]
scrape_configs:
  - job_name: kafka-disk-guard
    static_configs:
      - targets: [%q]
        labels: {cluster: %q}
`, rules, alertmanager, guard, cluster)
}

// alertmanagerConfig sends every alert on its own (group_by: ['...']) to
// the test's webhook at once, and its resolution too.
func alertmanagerConfig(webhook string) string {
	return fmt.Sprintf(`route:
  receiver: test
  group_by: ['...']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: test
    webhook_configs:
      - url: %q
        send_resolved: true
`, webhook)
}

// guardConfig runs the guard enforcing (cloud profile, ACL protection) on
// the broker's log dir, connected as the guard's super user.
func guardConfig(logDir, bootstrap, user, password, listen string) string {
	return fmt.Sprintf(`logDirs: [%q]
kafka:
  bootstrapServers: [%q]
  sasl: {mechanism: PLAIN, username: %q, password: %q}
enforcer:
  enabled: true
  profile: cloud
  protection: {strategy: acl, allowEveryoneIfNoAclFound: "true"}  # the test broker sets it true
  interval: 1s
web:
  listenAddress: %q
log:
  format: json
`, logDir, bootstrap, user, password, listen)
}

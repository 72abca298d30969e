package rights

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The docs that list the guard's rights (issue 11 point 6). Each lists the
// same complete set, rights.ACLs of every feature, in one or more of three
// forms: the compact lines ("Cluster: DESCRIBE, ..."), kafka-acls commands
// and a Strimzi KafkaUser's acls.
var rightsDocs = []string{
	"README.md",
	"docs/operating.md",
	"docs/configuration.md",
	"deploy/config.example.yaml",
	"charts/kafka-disk-guard/values.yaml",
	"charts/kafka-disk-guard/templates/NOTES.txt",
}

// defaultOwnershipTopic is enforcer.DefaultOwnershipTopic (the enforcer
// imports this package).
const defaultOwnershipTopic = "__kafka_disk_guard_protection"

var (
	compactRE   = regexp.MustCompile(`(?m)(Cluster|Topic '\*'|Topic [A-Za-z0-9._-]+): ([A-Z_]+(?:, [A-Z_]+)*)\s*$`)
	operationRE = regexp.MustCompile(`--operation ([A-Za-z]+)`)
	topicRE     = regexp.MustCompile(`--topic '?([^' ]+)'?`)
	strimziRE   = regexp.MustCompile(`\{resource: \{type: (topic|cluster)(?:, name: "?([^",}]+)"?, patternType: literal)?\}, operations: \[([^\]]*)\]\}`)
)

// snake turns Kafka's CamelCase operation names (DescribeConfigs) into
// the ACL enum's (DESCRIBE_CONFIGS).
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

func binding(kind, name, op string) string {
	if kind == "Cluster" {
		name = ClusterName
	}
	return ACL{Resource: Resource(kind), Name: name, Operation: Operation(op)}.String()
}

// listed returns, per form, the bindings a doc lists.
func listed(doc string) map[string][]string {
	out := map[string][]string{}
	for _, m := range compactRE.FindAllStringSubmatch(doc, -1) {
		kind, name := "Cluster", ""
		if m[1] != "Cluster" {
			kind, name = "Topic", strings.TrimPrefix(m[1], "Topic ")
			name = strings.Trim(name, "'")
		}
		for _, op := range strings.Split(m[2], ", ") {
			out["compact"] = append(out["compact"], binding(kind, name, op))
		}
	}
	joined := strings.ReplaceAll(doc, "\\\n", " ")
	for _, line := range strings.Split(joined, "\n") {
		if !strings.Contains(line, "kafka-acls") || !strings.Contains(line, "--add") || !strings.Contains(line, "--operation") {
			continue
		}
		kind, name := "Cluster", ""
		if t := topicRE.FindStringSubmatch(line); t != nil {
			kind, name = "Topic", t[1]
		} else if !strings.Contains(line, "--cluster") {
			out["kafka-acls"] = append(out["kafka-acls"], "a command without --cluster or --topic: "+line)
			continue
		}
		for _, op := range operationRE.FindAllStringSubmatch(line, -1) {
			out["kafka-acls"] = append(out["kafka-acls"], binding(kind, name, snake(op[1])))
		}
	}
	for _, m := range strimziRE.FindAllStringSubmatch(doc, -1) {
		kind, name := "Cluster", ""
		if m[1] == "topic" {
			kind, name = "Topic", m[2]
		}
		for _, op := range strings.Split(m[3], ",") {
			out["KafkaUser"] = append(out["KafkaUser"], binding(kind, name, snake(strings.TrimSpace(op))))
		}
	}
	for form := range out {
		slices.Sort(out[form])
		out[form] = slices.Compact(out[form])
	}
	return out
}

// Every doc that lists the rights lists exactly rights.ACLs of every
// feature, in each form it uses.
func TestDocsListTheRightsOfTheTable(t *testing.T) {
	var want []string
	for _, a := range ACLs(defaultOwnershipTopic, Features()...) {
		want = append(want, a.String())
	}
	slices.Sort(want)
	forms := map[string]bool{}
	for _, rel := range rightsDocs {
		raw, err := os.ReadFile(filepath.Join("..", rel))
		if err != nil {
			t.Fatal(err)
		}
		got := listed(string(raw))
		if len(got) == 0 {
			t.Errorf("%s lists no rights", rel)
		}
		for form, bindings := range got {
			forms[form] = true
			if !slices.Equal(bindings, want) {
				t.Errorf("%s (%s) lists\n %q\nthe table needs\n %q", rel, form, bindings, want)
			}
		}
	}
	for _, f := range []string{"compact", "kafka-acls", "KafkaUser"} {
		if !forms[f] {
			t.Errorf("no doc lists the rights as %s", f)
		}
	}
}

// The parser reads each form, so a doc that drops a right fails.
func TestListedForms(t *testing.T) {
	doc := "Cluster: DESCRIBE, ALTER\nTopic '*': DELETE\n" +
		"kafka-acls.sh --add \\\n  --allow-principal User:g --topic '*' \\\n  --operation Delete --operation DescribeConfigs\n" +
		`      - {resource: {type: cluster}, operations: [Describe, AlterConfigs]}` + "\n"
	got := listed(doc)
	want := map[string][]string{
		"compact":    {"Cluster:kafka-cluster:ALTER", "Cluster:kafka-cluster:DESCRIBE", "Topic:*:DELETE"},
		"kafka-acls": {"Topic:*:DELETE", "Topic:*:DESCRIBE_CONFIGS"},
		"KafkaUser":  {"Cluster:kafka-cluster:ALTER_CONFIGS", "Cluster:kafka-cluster:DESCRIBE"},
	}
	for f, w := range want {
		if !slices.Equal(got[f], w) {
			t.Errorf("%s: %q, want %q", f, got[f], w)
		}
	}
}

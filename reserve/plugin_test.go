package reserve

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

var update = flag.Bool("update", false, "rewrite generated files")

// pluginInternalTopics is the resource the broker-side plugin reads its
// list of Kafka's internal topics from.
const pluginInternalTopics = "../plugin/src/main/resources/io/kafkadiskguard/policy/internal-topics.txt"

// TestPluginInternalTopicsResource: the plugin admits without asking the
// same internal topics as Check (spec R5.4): its list is generated from
// agent.KafkaInternalTopics (go test ./reserve -run PluginInternalTopics
// -update rewrites it).
func TestPluginInternalTopicsResource(t *testing.T) {
	want := "# Kafka's internal topics: the plugin admits them without asking the guard.\n" +
		"# Generated from agent.KafkaInternalTopics (Go) by\n" +
		"#   go test ./reserve -run PluginInternalTopics -update\n" +
		"# Do not edit.\n" +
		strings.Join(agent.KafkaInternalTopics(), "\n") + "\n"
	path := filepath.FromSlash(pluginInternalTopics)
	switch got, err := os.ReadFile(path); {
	case err == nil && string(got) == want:
	case *update:
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		t.Errorf("%s is not generated from agent.KafkaInternalTopics (run go test ./reserve -run PluginInternalTopics -update): %v\n%s", path, err, got)
	}
	for _, topic := range agent.KafkaInternalTopics() {
		d, err := Check(offline(1<<30, 1<<30), Request{Operation: CreateTopic, Topic: topic, Partitions: 50, ReplicationFactor: 1}, Config{})
		if err != nil || !d.Allowed {
			t.Errorf("R5.4/%s: %+v %v, want admitted like the plugin admits it", topic, d, err)
		}
	}
}

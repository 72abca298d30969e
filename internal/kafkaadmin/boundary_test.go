package kafkaadmin

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Only this package speaks to Kafka through Sarama (docs/design.md): no
// other package of the product imports it, and the domain packages do not
// even depend on it. Tests elsewhere may use Sarama as a real client.
func TestOnlyKafkaadminImportsSarama(t *testing.T) {
	const module = "github.com/kafka-disk-guard/kafka-disk-guard"
	const sarama = "github.com/IBM/sarama"
	// One go list for both checks: each package's direct imports and its
	// whole dependency set.
	out, err := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := map[string][]string{}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.SplitN(line, "|", 3)
		if len(fields) != 3 {
			t.Fatalf("go list line %q: want path|imports|deps", line)
		}
		pkg := fields[0]
		deps[pkg] = strings.Fields(fields[2])
		checked++
		if pkg == module+"/internal/kafkaadmin" {
			continue
		}
		for _, imp := range strings.Fields(fields[1]) {
			if imp == sarama || strings.HasPrefix(imp, sarama+"/") {
				t.Errorf("%s imports %s: only internal/kafkaadmin may", pkg, imp)
			}
		}
	}
	if checked < 8 {
		t.Fatalf("go list found only %d packages:\n%s", checked, out)
	}
	for _, pkg := range []string{"agent", "enforcer", "exporter", "reserve", "forecast", "relief"} {
		d, ok := deps[module+"/"+pkg]
		if !ok {
			t.Fatalf("go list did not list %s", pkg)
		}
		if slices.Contains(d, sarama) {
			t.Errorf("%s depends on Sarama", pkg)
		}
	}
}

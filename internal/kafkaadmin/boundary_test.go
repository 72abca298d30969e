package kafkaadmin

import (
	"os/exec"
	"strings"
	"testing"
)

// Only this package speaks to Kafka through Sarama (docs/design.md): no
// other package of the product imports it, and the domain packages do not
// even depend on it. Tests elsewhere may use Sarama as a real client.
func TestOnlyKafkaadminImportsSarama(t *testing.T) {
	const module = "github.com/kafka-disk-guard/kafka-disk-guard"
	const sarama = "github.com/IBM/sarama"
	out, err := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		checked++
		if pkg == module+"/internal/kafkaadmin" {
			continue
		}
		for _, imp := range strings.Fields(imports) {
			if imp == sarama || strings.HasPrefix(imp, sarama+"/") {
				t.Errorf("%s imports %s: only internal/kafkaadmin may", pkg, imp)
			}
		}
	}
	if checked < 8 {
		t.Fatalf("go list found only %d packages:\n%s", checked, out)
	}
	for _, pkg := range []string{"agent", "enforcer", "exporter", "reserve", "forecast", "relief"} {
		out, err := exec.Command("go", "list", "-deps", module+"/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		if strings.Contains(string(out), sarama+"\n") {
			t.Errorf("%s depends on Sarama", pkg)
		}
	}
}

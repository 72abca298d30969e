package charttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docBlock returns the fenced code block of the doc (relative to the
// repository) that contains marker: the values or commands exactly as a
// reader copies them.
func docBlock(root, doc, marker string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		return "", err
	}
	var block []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			if in {
				text := strings.Join(block, "\n") + "\n"
				if strings.Contains(text, marker) {
					return text, nil
				}
				block = block[:0]
			}
			in = !in
			continue
		}
		if in {
			block = append(block, l)
		}
	}
	return "", fmt.Errorf("%s: no code block with %q", doc, marker)
}

// docCommand returns the shell command of block that starts with prefix
// (continuation lines joined), split into words as sh would (plain and
// single-quoted words only: what the docs use).
func docCommand(block, prefix string) ([]string, error) {
	lines := strings.Split(block, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			continue
		}
		cmd := l
		for strings.HasSuffix(strings.TrimSpace(cmd), `\`) && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(strings.TrimSpace(cmd), `\`) + " " + strings.TrimSpace(lines[i])
		}
		return splitWords(cmd)
	}
	return nil, fmt.Errorf("no command starting with %q in\n%s", prefix, block)
}

func splitWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case quoted && r == '\'':
			quoted = false
		case quoted:
			w.WriteRune(r)
		case r == '\'':
			quoted, inWord = true, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words, nil
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// TestDocsHaveTheLayouts checks, without a cluster, that every values block
// and command the chart tests take from the docs is still there.
func TestDocsHaveTheLayouts(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layouts {
		if _, err := docBlock(root, l.doc, l.marker); err != nil {
			t.Errorf("layout %s: %v", l.name, err)
		}
	}
	block, err := docBlock(root, sidecarDoc, sidecarMarker)
	if err != nil {
		t.Fatal(err)
	}
	install, err := docCommand(block, "helm install")
	if err != nil {
		t.Fatal(err)
	}
	want := "helm install kdg ./charts/kafka-disk-guard -n kafka --set mode=sidecar --set kafka.bootstrapServers={localhost:9092} --set podMonitor.enabled=true --set prometheusRule.enabled=true"
	if got := strings.Join(install, " "); got != want {
		t.Errorf("sidecar install command:\n got %s\nwant %s", got, want)
	}
	get, err := docCommand(block, "kubectl")
	if err != nil {
		t.Fatal(err)
	}
	if got := get[len(get)-3]; got != `jsonpath={.data.bitnami-values\.yaml}` {
		t.Errorf("sidecar kubectl command: output %q", got)
	}
}

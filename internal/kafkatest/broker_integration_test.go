//go:build integration

package kafkatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

var shared *Broker

func TestMain(m *testing.M) { os.Exit(Main(m, Options{}, &shared)) }

// segmentFiles lists a partition directory's segment files by suffix,
// keyed by base offset.
func segmentFiles(t *testing.T, dir string) map[string]map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^(\d{20})\.(log|index|timeindex)$`)
	segs := map[string]map[string]bool{}
	for _, e := range entries {
		m := name.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if segs[m[1]] == nil {
			segs[m[1]] = map[string]bool{}
		}
		segs[m[1]][m[2]] = true
	}
	return segs
}

// The broker rolls small segments, a Sarama producer and kcat both write,
// both read back, and the partition directory holds whole segments named
// by their 20-digit base offsets (spec R1.1).
func TestRealBrokerRollsSegmentsAndServesClients(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		t.Fatal("kcat is required (Debian package kcat): ", err)
	}
	const topic = "foundation.roll_test-1"
	shared.CreateTopic(t, topic, 1, map[string]string{"internal.segment.bytes": "32768", "retention.ms": "-1"})

	last := shared.Produce(t, topic, 0, 100, 1000)
	if last != 99 {
		t.Fatalf("last Sarama offset %d, want 99", last)
	}

	// kcat as an independent producer: 100 more records, one per line.
	var in bytes.Buffer
	for i := range 100 {
		fmt.Fprintf(&in, "kcat-%03d-%s\n", i, strings.Repeat("k", 990))
	}
	// Batches of 8 records stay under the 32 KiB segment size.
	cmd := exec.Command("kcat", "-P", "-b", shared.Addr, "-t", topic, "-p", "0", "-X", "batch.num.messages=8")
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat produce: %v\n%s", err, out)
	}

	// Sarama reads all 200 back, in order.
	got := shared.Consume(t, Fetch{Topic: topic, Offset: sarama.OffsetOldest, Records: 200, Timeout: 30 * time.Second})
	if !bytes.HasPrefix(got[0], []byte("a")) || !bytes.HasPrefix(got[100], []byte("kcat-000-")) || !bytes.HasPrefix(got[199], []byte("kcat-099-")) {
		t.Fatalf("records out of order: first %.10q, 101st %.10q, last %.10q", got[0], got[100], got[199])
	}

	// kcat reads them too.
	out, err := exec.Command("kcat", "-C", "-b", shared.Addr, "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%o\n").Output()
	if err != nil {
		t.Fatalf("kcat consume: %v", err)
	}
	if lines := strings.Count(string(out), "\n"); lines != 200 {
		t.Fatalf("kcat read %d records, want 200", lines)
	}

	segs := segmentFiles(t, filepath.Join(shared.LogDir, topic+"-0"))
	if len(segs) < 3 {
		t.Fatalf("partition directory holds %d segments, want several (200 KB into 32 KiB segments)", len(segs))
	}
	bases := make([]string, 0, len(segs))
	for base, files := range segs {
		for _, suffix := range []string{"log", "index", "timeindex"} {
			if !files[suffix] {
				t.Errorf("segment %s has no .%s file", base, suffix)
			}
		}
		bases = append(bases, base)
	}
	sort.Strings(bases)
	if bases[0] != "00000000000000000000" {
		t.Errorf("first segment %s, want base offset 0", bases[0])
	}
	t.Logf("segments: %v", bases)
}

// Without any protection a producer fills a small tmpfs until the broker
// cannot write: it logs "No space left on device", stops serving the
// replicas in the failed log dir and, since it was the broker's only log
// dir, shuts itself down.
// This is the baseline the enforcer must beat.
func TestFloodWithoutGuardFillsTheDisk(t *testing.T) {
	b, err := Start(Options{TmpfsSize: "48m"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop() })
	const topic = "flood"
	b.CreateTopic(t, topic, 1, map[string]string{"segment.bytes": "1048576", "retention.ms": "-1"})

	cfg := b.ClientConfig()
	cfg.Producer.Timeout = 5 * time.Second
	cfg.Net.DialTimeout = 2 * time.Second
	cfg.Net.ReadTimeout = 5 * time.Second
	p, err := sarama.NewSyncProducer([]string{b.Addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	value := bytes.Repeat([]byte("x"), 64*1024)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	var produced int
	var produceErr error
	for ctx.Err() == nil {
		msgs := make([]*sarama.ProducerMessage, 16)
		for i := range msgs {
			msgs[i] = &sarama.ProducerMessage{Topic: topic, Value: sarama.ByteEncoder(value)}
		}
		if produceErr = p.SendMessages(msgs); produceErr != nil {
			break
		}
		produced += len(msgs) * len(value)
	}
	if produceErr == nil {
		t.Fatalf("produced %d bytes into a 48 MiB tmpfs without an error", produced)
	}
	t.Logf("producer stopped after %d MiB: %v", produced>>20, produceErr)

	Eventually(t, 60*time.Second, func() error {
		log := b.ServerLog()
		if !strings.Contains(log, "No space left on device") {
			return errors.New(`server.log does not say "No space left on device" yet`)
		}
		if !strings.Contains(log, "because the log directory has failed") {
			return errors.New("server.log does not report the failed log dir yet")
		}
		if !strings.Contains(log, "Shutdown broker because all log dirs in "+b.LogDir+" have failed") {
			return errors.New("server.log does not report the shutdown yet")
		}
		return nil
	})
	for _, line := range strings.Split(b.ServerLog(), "\n") {
		if regexp.MustCompile(`No space left|log directory has failed|Shutdown broker`).MatchString(line) {
			t.Logf("broker: %.240s", line)
		}
	}
	Eventually(t, 60*time.Second, func() error {
		if b.Running() {
			return errors.New("broker still answers")
		}
		return nil
	})
	t.Log("baseline: the broker stopped answering after its only log dir filled")
}

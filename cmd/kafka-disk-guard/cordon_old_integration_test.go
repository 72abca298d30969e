//go:build integration

package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// R3.8 on a Kafka that cannot cordon: a single broker formatted at
// metadata.version 4.2 (under 4.3-IV0, no cordoned.log.dirs). check-config
// --online says the cordon is not supported and succeeds; the guard, with
// its log dir at the cordon bound, exports cordon_supported 0 and the
// held reason `unsupported`, and neither fails nor warns about it.
func TestR3_8KafkaThatCannotCordon(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{ReleaseVersion: "4.2"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop() })
	env := mapEnv(map[string]string{"KDG_SASL_PASSWORD": kafkatest.GuardPassword})
	// The cordon bound at 0.01%: any log dir is at it.
	file := writeFile(t, "guard.yaml", "logDirs: ["+b.LogDir+"]\n"+
		"kafka: {bootstrapServers: ["+b.SASLAddr+"], sasl: {mechanism: PLAIN, username: "+kafkatest.GuardUser+"}}\n"+
		"enforcer: {interval: 1s, relief: {cordon: {atPercent: 0.01}}}\n"+
		"web: {listenAddress: \"127.0.0.1:0\"}\n")

	var out bytes.Buffer
	err = run(t.Context(), []string{"check-config", "--online", file}, env, &out, io.Discard)
	t.Logf("check-config --online:\n%s", out.String())
	if err != nil {
		t.Fatalf("check-config --online failed on a Kafka that cannot cordon: %v", err)
	}
	if !strings.Contains(out.String(), "cordon: not supported: metadata.version feature level") {
		t.Errorf("check-config --online does not say the cordon is not supported:\n%s", out.String())
	}

	cfg, err := parseRunConfig([]string{"--config", file}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	addr, logs := startServe(t, cfg)
	waitMetric(t, addr, "\nkafka_disk_guard_cordon_supported 0\n")
	waitMetric(t, addr, `kafka_disk_guard_log_dir_cordon_held{log_dir="`+b.LogDir+`",reason="unsupported"} 1`)
	waitMetric(t, addr, `kafka_disk_guard_log_dir_cordoned{log_dir="`+b.LogDir+`",owner="guard"} 0`)
	waitMetric(t, addr, `kafka_disk_guard_reconciles_total{result="ok"}`)
	for _, l := range logLines(t, logs.String()) {
		if (l["level"] == "WARN" || l["level"] == "ERROR") && strings.Contains(strings.ToLower(l["msg"].(string)), "cordon") {
			t.Errorf("%s about the cordon on a Kafka that cannot cordon: %v", l["level"], l)
		}
	}
	if !strings.Contains(logs.String(), `"reason":"unsupported"`) {
		t.Errorf("no log line says why the log dir is not cordoned:\n%s", logs.String())
	}
}

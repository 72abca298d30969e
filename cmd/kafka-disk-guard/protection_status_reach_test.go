package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// R7.4: the status table names the cluster-wide reach of each lowered
// local retention (every replica of the topic, on every broker holding
// one), and says so when it was not read.
func TestStatusShowsTheReachOfLoweredLocalRetention(t *testing.T) {
	v := "400"
	st := ledger.Status{Brokers: []ledger.BrokerStatus{{BrokerID: 1, State: ledger.StateActive, Configs: []ledger.ConfigStatus{
		{Topic: "events", Key: enforcer.LocalRetentionBytesKey, Value: v, Current: &v, InPlace: true, Read: true, Live: true,
			Replicas: &ledger.TopicReplicas{Partitions: 12, Replicas: 36, Brokers: 6}},
		{Topic: "logs", Key: enforcer.LocalRetentionBytesKey, Value: v, Current: &v, InPlace: true, Read: true, Live: true},
	}}}}
	var out bytes.Buffer
	writeStatus(&out, st, false, time.Now())
	for _, w := range []string{"REACHES (CLUSTER-WIDE)", "36 replicas on 6 brokers", "every replica (not read)"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("R7.4/%q missing from\n%s", w, out.String())
		}
	}
}

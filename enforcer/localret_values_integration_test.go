//go:build integration

package enforcer_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// R7.4, the broker as oracle: which local.retention.bytes Kafka 4.4
// accepts (remote.copy.lag.bytes, KIP-1241; retention.bytes;
// remote.log.copy.disable) is what enforcer.AcceptedLocalBytes says, a
// refusal reaches the guard as ErrConfigRefused (result refused, never
// "changed by an operator"), and the floor the guard lowers to is
// accepted.
func TestR7_4LocalRetentionValuesKafkaAccepts(t *testing.T) {
	b := sharedTiered(t)
	a := newAdmin(t, b, enforcer.DefaultOwnershipTopic)
	topics := map[string]map[string]string{
		"tlag":  {"remote.storage.enable": "true", "remote.copy.lag.bytes": "300000"},
		"tret":  {"remote.storage.enable": "true", "retention.bytes": "1000000"},
		"tcopy": {"remote.storage.enable": "true", "retention.bytes": "1000000", "remote.log.copy.disable": "true"},
	}
	tries := map[string][]int64{
		"tlag":  {0, 1, 299999, 300000, 300001, -1, -2},
		"tret":  {2000000, -1, 1000000, 500000, 1, 0, -2},
		"tcopy": {500000, 1, 1000000, -2},
	}
	for _, topic := range []string{"tlag", "tret", "tcopy"} {
		b.CreateTopic(t, topic, 1, topics[topic])
		dropWhenDone(t, b, topic)
		cfg := tieredConfigs(t, b, topic)[topic]
		if topic == "tlag" {
			if cfg.RemoteCopyLagBytes != 300000 {
				t.Fatalf("remote.copy.lag.bytes read as %d", cfg.RemoteCopyLagBytes)
			}
			floor := enforcer.LocalRetentionFloor(cfg)
			if floor != 300000 {
				t.Errorf("R7.4/floor %d, want remote.copy.lag.bytes", floor)
			}
		} else if floor := enforcer.LocalRetentionFloor(cfg); floor != 1 {
			t.Errorf("R7.4/%s: floor %d, want 1", topic, floor)
		}
		for _, v := range tries[topic] {
			_, ok := enforcer.AcceptedLocalBytes(v, cfg)
			s := strconv.FormatInt(v, 10)
			err := a.AlterTopicConfig(t.Context(), topic, enforcer.LocalRetentionBytesKey, &s)
			switch {
			case err != nil && !errors.Is(err, enforcer.ErrConfigRefused):
				t.Fatalf("%s=%d: %v (not a refusal)", topic, v, err)
			case (err == nil) != ok:
				t.Errorf("R7.4/%s local.retention.bytes=%d: Kafka accepted %v (%v), the model says %v", topic, v, err == nil, err, ok)
			}
		}
	}
}

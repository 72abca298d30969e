//go:build integration

package enforcer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/internal/scantest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

// guardedTopic creates a topic on the shared broker with some data and
// returns the capacities that put it at 95% and 50%.
func guardedTopic(t *testing.T, b *kafkatest.Broker, topic string) (src *scantest.Source, capacity *fixedCapacity, full, calm uint64) {
	t.Helper()
	b.CreateTopic(t, topic, 1, nil)
	b.Produce(t, topic, 0, 20, 1000)
	capacity = &fixedCapacity{v: 1 << 40}
	src = &scantest.Source{LogDir: b.LogDir, Topics: map[string]bool{topic: true}, Capacity: capacity.get}
	used := usedBytes(src)
	return src, capacity, uint64(float64(used) / 0.95), uint64(float64(used) / 0.50)
}

// R8.3: on a broker with allow.everyone.if.no.acl.found=true (the shared
// broker) and a topic without ACLs, protection takes away WRITE only:
// anonymous clients keep reading and altering the topic's configs, the
// exempt principal keeps writing, everyone else is refused, and no DENY
// is added (a DENY for User:* would hit the exempt principal too).
func TestR8_3AbsenceShapeKeepsEveryRightButWrite(t *testing.T) {
	const topic = "absence-shape"
	src, capacity, full, calm := guardedTopic(t, shared, topic)
	capacity.set(full)
	limitedPrincipal := "User:" + kafkatest.LimitedUser
	cfg := enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond, Protection: enforcer.ProtectionConfig{
		AllowEveryoneIfNoACLFound: "true", ExemptPrincipals: []string{limitedPrincipal}}}
	g := startGuard(t, shared, guardSpec{cfg: cfg, src: src, ownTopic: "__kdg_test_absence"})
	kafkatest.Eventually(t, 30*time.Second, func() error {
		acls := topicACLs(t, g.admin, topic)
		for _, op := range []string{enforcer.OpRead, enforcer.OpCreate, enforcer.OpDelete, enforcer.OpAlter, enforcer.OpAlterConfigs} {
			if !hasACL(acls, enforcer.AnyPrincipal, op, enforcer.PermAllow) {
				return fmt.Errorf("no ALLOW %s User:*: %v", op, acls)
			}
		}
		if !hasACL(acls, limitedPrincipal, enforcer.OpWrite, enforcer.PermAllow) || len(acls) != 6 {
			return fmt.Errorf("bindings %v", acls)
		}
		return nil
	})
	anon := shared.ClientConfig()
	if err := produceAs(anon, []string{shared.Addr}, topic); !refused(err) {
		t.Errorf("R8.3/anonymous produces under protection: %v", err)
	}
	if err := readAs(shared.ClientConfig(), []string{shared.Addr}, topic); err != nil {
		t.Errorf("R8.3/anonymous cannot read under protection: %v", err)
	}
	ca, err := sarama.NewClusterAdmin([]string{shared.Addr}, shared.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close()
	v := "604800001"
	if err := ca.AlterConfig(sarama.TopicResource, topic, map[string]*string{"retention.ms": &v}, false); err != nil {
		t.Errorf("R8.3/anonymous cannot alter the topic's configs under protection: %v", err)
	}
	if err := ca.DeleteRecords(topic, map[int32]int64{0: 1}); err != nil {
		t.Errorf("R8.3/anonymous cannot delete records under protection: %v", err)
	}
	lim := shared.UserConfig(kafkatest.LimitedUser, kafkatest.LimitedPassword)
	if err := produceAs(lim, []string{shared.SASLAddr}, topic); err != nil {
		t.Errorf("R8.3/the exempt principal is refused: %v", err)
	}
	capacity.set(calm)
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if acls := topicACLs(t, g.admin, topic); len(acls) != 0 {
			return fmt.Errorf("still %v", acls)
		}
		return nil
	})
	if err := produceAs(shared.ClientConfig(), []string{shared.Addr}, topic); err != nil {
		t.Errorf("anonymous cannot produce after the lift: %v", err)
	}
}

// R4.4: in observe mode the guard still lifts what it set earlier, says
// so, and sets nothing.
func TestR4_4ObserveModeLiftsWhatItSetEarlier(t *testing.T) {
	const (
		topic = "observe-lifts"
		own   = "__kdg_test_observe_lift"
	)
	src, capacity, full, _ := guardedTopic(t, shared, topic)
	capacity.set(full)
	// A short lease: observe mode lifts only once no process has renewed
	// the record for a lease (R8.8: a duplicate with the same instance
	// name may be renewing it).
	lease := enforcer.ProtectionConfig{LeaseDuration: 3 * time.Second}
	live := startGuard(t, shared, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond, Protection: lease}, src: src, ownTopic: own})
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if len(topicACLs(t, live.admin, topic)) == 0 {
			return errors.New("not protected yet")
		}
		return nil
	})
	live.stop()
	// Still full: an enforcing guard would keep it. Observe mode lifts.
	obs := startGuard(t, shared, guardSpec{cfg: enforcer.Config{Interval: 200 * time.Millisecond, Protection: lease}, src: src, ownTopic: own})
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if acls := topicACLs(t, obs.admin, topic); len(acls) != 0 {
			return fmt.Errorf("R4.4/observe mode keeps %v", acls)
		}
		return nil
	})
	if len(obs.logs.lines("observe mode: lifting the protection this agent set earlier (lifting blocks nothing and deletes nothing)")) != 1 {
		t.Error("R4.4/observe mode did not say it lifts")
	}
	// R8.5: the claim leaves the record once a pass read its binding back
	// gone (two-phase release).
	kafkatest.Eventually(t, 30*time.Second, func() error {
		recs, err := obs.admin.LoadRecords(context.Background())
		if err != nil || recs.Agents[1].Claims() {
			return fmt.Errorf("R4.4/record after observe mode's lift: %+v %v", recs.Agents[1], err)
		}
		return nil
	})
	obs.waitReconciles(t, 5)
	if acls := topicACLs(t, obs.admin, topic); len(acls) != 0 {
		t.Errorf("R4.4/observe mode protected: %v", acls)
	}
	if v := metric(obs.reg, "kafka_disk_guard_write_protection_wanted", nil); v != 0 {
		t.Errorf("R4.4/observe mode wants protection: %v", v)
	}
}

// R8.2: a broker without an authorizer (authorizer.class.name unset):
// protection cannot apply; the gauge says 0, the error names the missing
// authorizer, and the broker is not reported unreachable.
func TestR8_2NoAuthorizerIsNamed(t *testing.T) {
	b, err := kafkatest.Start(kafkatest.Options{NoAuthorizer: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Stop() })
	const topic = "no-authorizer"
	src, capacity, full, _ := guardedTopic(t, b, topic)
	capacity.set(full)
	g := startGuard(t, b, guardSpec{cfg: enforcer.Config{Enabled: true, Interval: 200 * time.Millisecond}, src: src, ownTopic: "__kdg_test_noauthz"})
	kafkatest.Eventually(t, 30*time.Second, func() error {
		if v := metric(g.reg, "kafka_disk_guard_write_protection_error", map[string]string{"reason": "no_authorizer"}); v != 1 {
			return fmt.Errorf("R8.2/error{no_authorizer} %v", v)
		}
		return nil
	})
	g.waitReconciles(t, 3)
	if v := metric(g.reg, "kafka_disk_guard_write_protection_active", nil); v != 0 {
		t.Errorf("R8.2/active %v without an authorizer", v)
	}
	if v := metric(g.reg, "kafka_disk_guard_write_protection_wanted", nil); v != 1 {
		t.Errorf("R8.2/wanted %v", v)
	}
	if v := metric(g.reg, "kafka_disk_guard_enforcer_blocked", map[string]string{"reason": "broker_unreachable"}); v != 0 {
		t.Errorf("R8.2/a broker without an authorizer reported unreachable")
	}
	lines := g.logs.lines("write protection impossible")
	if len(lines) == 0 || !strings.Contains(fmt.Sprint(lines[0]["err"]), "no authorizer on the brokers") {
		t.Errorf("R8.2/log %v", lines)
	}
	if err := produceAs(b.ClientConfig(), []string{b.Addr}, topic); err != nil {
		t.Errorf("without an authorizer, producing works (nothing could be protected): %v", err)
	}
}

//go:build integration

// Package monitoring_test runs the monitoring stack end to end against real
// components: an Apache Kafka broker on a 256 MiB tmpfs, the guard (`run`,
// enforcing), Prometheus and Alertmanager from their Debian packages (plain
// processes on loopback with generated configs), and a webhook receiver in
// the test. A producer fills the disk; the test checks what an operator
// sees: alerts with their labels, summary and runbook, write protection
// alerted while producers are refused, every dashboard panel showing data,
// and the chart's PrometheusRule holding the rules that were loaded.
package monitoring_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/e2e/e2etest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkatest"
)

const (
	cluster = "e2e"
	profile = "cloud"
	flood   = "flood"
	audit   = "audit"
)

// Alerts the scenario may raise, because their condition really holds
// during it; any other alert, pending or firing, fails the test.
var expectedAlerts = map[string]string{
	"KafkaDiskGuardDiskUsageHigh":            "the producer fills the disk past 70%",
	"KafkaDiskGuardDiskPredictedFull":        "usage climbs by megabytes a second",
	"KafkaDiskGuardCloudDeleteBand":          "usage passes 75-85%",
	"KafkaDiskGuardCloudPurgeBand":           "usage passes 85-90%",
	"KafkaDiskGuardCloudProtectBand":         "usage reaches 90%",
	"KafkaDiskGuardWriteProtectionActive":    "the guard protects at 90%",
	"KafkaDiskGuardUnexpiredDataDeleted":     "the purge band deletes unexpired records",
	"KafkaDiskGuardReservedSpaceHigh":        "the flood topic has no retention.bytes: its reservation is its write rate x 7 days",
	"KafkaDiskGuardExpiredRetainedBytesHigh": "purged segments wait for a retention check the broker runs hourly",
}

func statfsRatio(path string) float64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil || st.Blocks == 0 {
		return 0
	}
	return float64(st.Blocks-st.Bfree) / float64(st.Blocks)
}

// usageWatch records when the filesystem crosses thresholds.
type usageWatch struct {
	mu       sync.Mutex
	max      float64
	first70  time.Time // first >= 70%
	first90  time.Time // first >= 90%
	below70  time.Time // first < 70% after having been above
	ratioNow float64
}

func (w *usageWatch) run(ctx context.Context, path string) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r := statfsRatio(path)
		now := time.Now()
		w.mu.Lock()
		w.ratioNow, w.max = r, max(w.max, r)
		if r >= 0.70 && w.first70.IsZero() {
			w.first70 = now
		}
		if r >= 0.90 && w.first90.IsZero() {
			w.first90 = now
		}
		if r < 0.70 && !w.first70.IsZero() && w.below70.IsZero() {
			w.below70 = now
		}
		w.mu.Unlock()
	}
}

func (w *usageWatch) get() usageWatch {
	w.mu.Lock()
	defer w.mu.Unlock()
	return usageWatch{max: w.max, first70: w.first70, first90: w.first90, below70: w.below70, ratioNow: w.ratioNow}
}

// attempt is one produce request and its outcome.
type attempt struct {
	at      time.Time
	refused bool // TOPIC_AUTHORIZATION_FAILED
	err     error
}

// producer writes 1 MiB requests to the flood topic at a bounded rate,
// recording every outcome.
type producer struct {
	p        sarama.SyncProducer
	mu       sync.Mutex
	attempts []attempt
	bytes    int64
}

func (p *producer) send() attempt {
	value := make([]byte, 64<<10)
	msgs := make([]*sarama.ProducerMessage, 16)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{Topic: flood, Value: sarama.ByteEncoder(value)}
	}
	err := p.p.SendMessages(msgs)
	a := attempt{at: time.Now(), err: err, refused: isAuthFailed(err)}
	p.mu.Lock()
	p.attempts = append(p.attempts, a)
	if err == nil {
		p.bytes += int64(len(msgs) * len(value))
	}
	p.mu.Unlock()
	return a
}

// loop sends every interval until ctx ends or stop returns true.
func (p *producer) loop(ctx context.Context, interval time.Duration, stop func(attempt) bool) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for ctx.Err() == nil {
		if stop(p.send()) {
			return
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

func (p *producer) history() []attempt {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.attempts)
}

func isAuthFailed(err error) bool {
	if errors.Is(err, sarama.ErrTopicAuthorizationFailed) {
		return true
	}
	var pes sarama.ProducerErrors
	if errors.As(err, &pes) {
		for _, pe := range pes {
			if errors.Is(pe.Err, sarama.ErrTopicAuthorizationFailed) {
				return true
			}
		}
	}
	return false
}

func TestMonitoringStack(t *testing.T) {
	testStart := time.Now()
	root := e2etest.Root(t)
	for _, bin := range []string{"prometheus", "prometheus-alertmanager"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s is not installed (Debian packages prometheus and prometheus-alertmanager; .ci/run installs them)", bin)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	work := t.TempDir()

	// The guard binary, built as the tests build it.
	guardBin := filepath.Join(work, "kafka-disk-guard")
	if out, err := exec.Command("go", "build", "-o", guardBin, filepath.Join(root, "cmd", "kafka-disk-guard")).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// A broker whose only log dir is a 256 MiB tmpfs. Its retention check
	// runs at start and then hourly: space is freed in this test only by
	// what the test does (deleting the flood topic), so protection holds
	// until then, whatever the machine's speed.
	b, err := kafkatest.Start(kafkatest.Options{TmpfsSize: "256m", RetentionCheckMs: 3600_000, FileDeleteDelayMs: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Error(err)
		}
	})
	b.CreateTopic(t, flood, 2, map[string]string{"segment.bytes": "1048576"})
	// audit holds records stamped two hours ago with one hour of
	// retention: eligible segments (the broker would delete them at its
	// next retention check), for the eligible-segment panels.
	b.CreateTopic(t, audit, 1, map[string]string{"retention.ms": "3600000", "internal.segment.bytes": "16384"})
	oldRecords(t, b, 24)

	// The guard.
	guardAddr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t))
	guardCfg := e2etest.WriteFile(t, work, "guard.yaml",
		guardConfig(b.LogDir, b.SASLAddr, kafkatest.GuardUser, kafkatest.GuardPassword, guardAddr))
	guard := e2etest.Start(t, "guard", work, guardBin, "run", "--config", guardCfg)
	waitHTTP(ctx, t, guard, "http://"+guardAddr+"/readyz")

	// The webhook, Alertmanager, Prometheus.
	hook := newReceiver()
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(hookSrv.Close)
	amAddr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t))
	amCfg := e2etest.WriteFile(t, work, "alertmanager.yml", alertmanagerConfig(hookSrv.URL+"/"))
	am := e2etest.Start(t, "alertmanager", work, "prometheus-alertmanager", "--config.file="+amCfg,
		"--storage.path="+filepath.Join(work, "am-data"), "--web.listen-address="+amAddr, "--cluster.listen-address=")
	waitHTTP(ctx, t, am, "http://"+amAddr+"/-/ready")

	rules := testRules(t, root, work, profile)
	promAddr := fmt.Sprintf("127.0.0.1:%d", e2etest.FreePort(t))
	promCfg := e2etest.WriteFile(t, work, "prometheus.yml", prometheusConfig(guardAddr, amAddr, rules, cluster))
	promProc := e2etest.Start(t, "prometheus", work, "prometheus", "--config.file="+promCfg,
		"--storage.tsdb.path="+filepath.Join(work, "prom-data"), "--web.listen-address="+promAddr,
		"--rules.alert.resend-delay=1s")
	waitHTTP(ctx, t, promProc, "http://"+promAddr+"/-/ready")
	prom := promAPI{"http://" + promAddr}
	runStart := time.Now()

	// The first scrape: the counters dashboards plot exist, at zero for
	// the enforcer's actions.
	waitQuery(ctx, t, prom, `up{job="kafka-disk-guard"} == 1`)
	t.Run("counters exist at zero from the start", func(t *testing.T) {
		checkCountersAtStart(ctx, t, prom, root)
	})

	watch := &usageWatch{}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go watch.run(watchCtx, b.LogDir)

	cfg := b.ClientConfig()
	cfg.Producer.Timeout = 5 * time.Second
	cfg.Net.ReadTimeout = 10 * time.Second
	sp, err := sarama.NewSyncProducer([]string{b.Addr}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	prod := &producer{p: sp}

	// 1. Fill to 72% at 16 MiB/s and stop: the 70% alert reaches the webhook.
	prod.loop(ctx, 62*time.Millisecond, func(a attempt) bool {
		if a.err != nil {
			t.Fatalf("produce below 72%%: %v", a.err)
		}
		return statfsRatio(b.LogDir) >= 0.72
	})
	usage, err := hook.wait(ctx, "KafkaDiskGuardDiskUsageHigh", "firing", runStart)
	if err != nil {
		t.Fatal(err)
	}
	w := watch.get()
	activeAt := alertActiveAt(ctx, t, prom, "KafkaDiskGuardDiskUsageHigh")
	t.Logf("70%% alert: usage crossed 70%% at +0, pending in Prometheus at %+.1fs, webhook received it at %+.1fs (for: 10m scaled to %ds; scrape and evaluation every 1s, group_wait 1s)",
		activeAt.Sub(w.first70).Seconds(), usage.at.Sub(w.first70).Seconds(), 600/forScale)
	t.Run("70% alert reaches the webhook with labels, summary and runbook", func(t *testing.T) {
		checkAlert(t, root, usage.alert, map[string]string{
			"alertname": "KafkaDiskGuardDiskUsageHigh", "severity": "warning", "log_dir": b.LogDir,
			"instance": guardAddr, "job": "kafka-disk-guard", "cluster": cluster,
		}, b.LogDir)
	})

	// 2. Keep producing at 8 MiB/s into write protection: the alert fires
	// while the producer is refused.
	prodCtx, stopProd := context.WithCancel(ctx)
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		prod.loop(prodCtx, 125*time.Millisecond, func(attempt) bool { return false })
	}()
	wp, err := hook.wait(ctx, "KafkaDiskGuardWriteProtectionActive", "firing", runStart)
	if err != nil {
		stopProd()
		t.Fatal(err)
	}
	// Let the producer try again after the notification, then stop it.
	var after attempt
	err = e2etest.Poll(ctx, 50*time.Millisecond, func() error {
		for _, a := range prod.history() {
			if a.at.After(wp.at) {
				after = a
				return nil
			}
		}
		return errors.New("no produce attempt after the notification")
	})
	stopProd()
	<-prodDone
	if err != nil {
		t.Fatal(err)
	}
	w = watch.get()
	t.Run("write-protection alert fires while producers are refused", func(t *testing.T) {
		checkRefusedAround(t, prod.history(), wp.at, w.first90)
		if !after.refused {
			t.Errorf("the first produce after the notification was not refused: %v", after.err)
		}
		if v := queryAt(ctx, t, prom, `ALERTS{alertname="KafkaDiskGuardWriteProtectionActive",alertstate="firing"}`, after.at); v == 0 {
			t.Errorf("the alert was not firing in Prometheus when the producer was refused at %s", after.at.Format(time.TimeOnly))
		}
		checkAlert(t, root, wp.alert, map[string]string{
			"alertname": "KafkaDiskGuardWriteProtectionActive", "severity": "critical", "log_dir": b.LogDir,
			"strategy": "acl", "instance": guardAddr, "job": "kafka-disk-guard", "cluster": cluster,
		}, b.LogDir)
	})

	// 3. An operator frees the disk (deletes the flood topic): both alerts
	// resolve.
	if err := b.Admin(t).DeleteTopic(flood); err != nil {
		t.Fatalf("delete topic %s: %v", flood, err)
	}
	usageResolved, err := hook.wait(ctx, "KafkaDiskGuardDiskUsageHigh", "resolved", usage.at)
	if err != nil {
		t.Fatal(err)
	}
	wpResolved, err := hook.wait(ctx, "KafkaDiskGuardWriteProtectionActive", "resolved", wp.at)
	if err != nil {
		t.Fatal(err)
	}
	w = watch.get()
	t.Logf("resolution: usage fell under 70%% at +0, write protection resolved at %+.1fs, 70%% alert resolved at %+.1fs",
		wpResolved.at.Sub(w.below70).Seconds(), usageResolved.at.Sub(w.below70).Seconds())
	if usageResolved.at.Before(w.below70) {
		t.Errorf("the 70%% alert resolved at %s, before usage fell under 70%% at %s", usageResolved.at, w.below70)
	}
	// Deleting the topic makes files vanish under the agent's scans, which
	// the runbook calls normal: wait until Prometheus has scraped them, and
	// give the rules a few evaluations to (not) react.
	vanishedCtx, cancelVanished := context.WithTimeout(ctx, 15*time.Second)
	_ = e2etest.Poll(vanishedCtx, 200*time.Millisecond, func() error {
		res, err := prom.instant(vanishedCtx, `kafka_disk_guard_scan_errors_total{kind="vanished"} > 0`)
		if err == nil && len(res) == 0 {
			err = errors.New("no vanished scan errors yet")
		}
		return err
	})
	cancelVanished()
	time.Sleep(3 * time.Second)
	runEnd := time.Now()

	// 4. Over the whole run.
	t.Run("no alert on conditions the runbook calls normal", func(t *testing.T) {
		checkOnlyExpectedAlerts(ctx, t, prom, runStart, runEnd)
	})
	t.Run("every dashboard panel shows data", func(t *testing.T) {
		checkDashboards(ctx, t, prom, root, map[string]string{"cluster": cluster, "broker": guardAddr, "log_dir": b.LogDir}, runStart, runEnd)
	})
	t.Run("the chart's PrometheusRule holds the loaded rules", func(t *testing.T) {
		checkChartRules(ctx, t, prom, profile)
	})
	if !b.Running() {
		t.Error("the broker stopped")
	}
	t.Logf("max usage %.1f%%, produced %d MiB in %d requests; test took %s",
		w.max*100, prod.bytes>>20, len(prod.history()), time.Since(testStart).Round(time.Second))
}

// oldRecords writes n 4 KiB records stamped two hours ago to the audit
// topic (16 KiB segments: several closed, all past retention).
func oldRecords(t *testing.T, b *kafkatest.Broker, n int) {
	t.Helper()
	p := b.Producer(t)
	old := time.Now().Add(-2 * time.Hour)
	for i := range n {
		_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: audit, Value: sarama.ByteEncoder(make([]byte, 4096)), Timestamp: old.Add(time.Duration(i) * time.Second)})
		if err != nil {
			t.Fatalf("produce to %s: %v", audit, err)
		}
	}
}

// waitHTTP waits until url answers 200 while the process runs.
func waitHTTP(ctx context.Context, t *testing.T, p *e2etest.Process, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	err := e2etest.Poll(ctx, 100*time.Millisecond, func() error {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited: %v", p.Name, err)
		}
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s not ready at %s: %v\n%s", p.Name, url, err, p.Tail(30))
	}
}

// waitQuery waits until q returns a series.
func waitQuery(ctx context.Context, t *testing.T, prom promAPI, q string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err := e2etest.Poll(ctx, 200*time.Millisecond, func() error {
		res, err := prom.instant(ctx, q)
		if err != nil {
			return err
		}
		if len(res) == 0 {
			return errors.New("no series")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// queryAt returns the sum of q's values at ts (0 when there is none).
func queryAt(ctx context.Context, t *testing.T, prom promAPI, q string, ts time.Time) float64 {
	t.Helper()
	res, err := prom.rangeQuery(ctx, q, ts, ts, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, s := range res {
		for _, v := range s.Values {
			if v[0].(float64) == float64(ts.Unix()) {
				var f float64
				fmt.Sscan(v[1].(string), &f)
				sum += f
			}
		}
	}
	return sum
}

func alertActiveAt(ctx context.Context, t *testing.T, prom promAPI, name string) time.Time {
	t.Helper()
	as, err := prom.alerts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.Labels["alertname"] == name {
			return a.ActiveAt
		}
	}
	t.Fatalf("%s is not active in Prometheus", name)
	return time.Time{}
}

// checkAlert compares a received alert with its rule: labels, the summary
// and runbook URL as shipped, and a description naming the log dir.
func checkAlert(t *testing.T, root string, a amAlert, labels map[string]string, logDir string) {
	t.Helper()
	rule := shippedRule(t, root, labels["alertname"])
	for k, v := range labels {
		if a.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, a.Labels[k], v, a.Labels)
		}
	}
	if a.Annotations["summary"] != rule.Annotations["summary"] {
		t.Errorf("summary %q, want %q", a.Annotations["summary"], rule.Annotations["summary"])
	}
	if a.Annotations["runbook_url"] != rule.Annotations["runbook_url"] || !strings.Contains(a.Annotations["runbook_url"], "docs/operating.md#"+strings.ToLower(labels["alertname"])) {
		t.Errorf("runbook_url %q, want %q", a.Annotations["runbook_url"], rule.Annotations["runbook_url"])
	}
	if d := a.Annotations["description"]; !strings.Contains(d, logDir) || strings.Contains(d, "{{") {
		t.Errorf("description %q does not name the log dir %s", d, logDir)
	}
}

func shippedRule(t *testing.T, root, name string) chartRule {
	t.Helper()
	for _, g := range shippedGroups(t, root) {
		for _, r := range g.Rules {
			if r.Alert == name {
				return r
			}
		}
	}
	t.Fatalf("no rule %s in alerts/", name)
	return chartRule{}
}

// checkRefusedAround: the producer was refused before the notification
// arrived and after it, with no write accepted in between, and the first
// refusal came after usage reached 90%.
func checkRefusedAround(t *testing.T, hist []attempt, at, first90 time.Time) {
	t.Helper()
	lastBefore, firstAfter := -1, -1
	for i, a := range hist {
		if !a.at.After(at) {
			lastBefore = i
		} else if firstAfter < 0 {
			firstAfter = i
		}
	}
	if lastBefore < 0 || firstAfter < 0 {
		t.Fatalf("no produce attempts around the notification at %s", at)
	}
	if !hist[lastBefore].refused {
		t.Fatalf("the last produce before the notification was not refused: %v", hist[lastBefore].err)
	}
	firstRefused := lastBefore
	for firstRefused > 0 && hist[firstRefused-1].refused {
		firstRefused--
	}
	for _, a := range hist {
		if a.err != nil && !a.refused {
			t.Errorf("produce failed with something else than TOPIC_AUTHORIZATION_FAILED: %v", a.err)
		}
	}
	if hist[firstRefused].at.Before(first90) {
		t.Errorf("refused at %s, before usage reached 90%% at %s", hist[firstRefused].at, first90)
	}
	t.Logf("write protection: usage reached 90%% at +0, first refused produce at %+.1fs, webhook received the alert at %+.1fs; %d requests refused before it, the next one after it refused too",
		hist[firstRefused].at.Sub(first90).Seconds(), at.Sub(first90).Seconds(), lastBefore-firstRefused+1)
}

// checkCountersAtStart: every counter a dashboard plots has series at the
// first scrape; the enforcer's action counters are all 0 then.
func checkCountersAtStart(ctx context.Context, t *testing.T, prom promAPI, root string) {
	t.Helper()
	counterRE := regexp.MustCompile(`kafka_disk_guard_[a-z_]+_total`)
	var names []string
	for _, d := range readDashboards(t, root) {
		for _, q := range d.queries() {
			for _, n := range counterRE.FindAllString(q.expr, -1) {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	slices.Sort(names)
	for _, n := range names {
		res, err := prom.instant(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 {
			t.Errorf("%s has no series at the first scrape: its panels show No data", n)
			continue
		}
		switch n {
		case "kafka_disk_guard_actions_total", "kafka_disk_guard_action_bytes_total", "kafka_disk_guard_unexpired_deleted_bytes_total":
			for _, s := range res {
				if s.float() != 0 {
					t.Errorf("%s%v = %v before the disk filled", n, s.Metric, s.float())
				}
			}
		}
		t.Logf("%s: %d series at the first scrape", n, len(res))
	}
}

// checkOnlyExpectedAlerts: over the run, no alert outside expectedAlerts
// was pending or firing (the scan-errors alert ignores `vanished`, which
// the runbook calls normal on busy brokers).
func checkOnlyExpectedAlerts(ctx context.Context, t *testing.T, prom promAPI, start, end time.Time) {
	t.Helper()
	res, err := prom.rangeQuery(ctx, `max by (alertname, alertstate) (ALERTS)`, start, end, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, s := range res {
		name := s.Metric["alertname"]
		seen = append(seen, name+"/"+s.Metric["alertstate"])
		if _, ok := expectedAlerts[name]; !ok {
			t.Errorf("%s was %s during the run: its condition does not hold in this scenario", name, s.Metric["alertstate"])
		}
	}
	slices.Sort(seen)
	kinds, err := prom.instant(ctx, `sum by (kind) (kafka_disk_guard_scan_errors_total) > 0`)
	if err != nil {
		t.Fatal(err)
	}
	counted := map[string]float64{}
	for _, k := range kinds {
		counted[k.Metric["kind"]] = k.float()
	}
	t.Logf("alerts seen: %v; scan errors counted during the run: %v", seen, counted)
}

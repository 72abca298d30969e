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
	"KafkaDiskGuardClusterWriteProtection":   "the guard's record claims the protection in place (the cluster-wide view)",
	"KafkaDiskGuardUnexpiredDataDeleted":     "the purge band deletes unexpired records",
	"KafkaDiskGuardPurgeCapReached":          "the purge band takes the hour's cap of unexpired records (5% of the disk) while the producer keeps writing",
	"KafkaDiskGuardReservedSpaceHigh":        "the flood topic has no retention.bytes: its reservation is its write rate x 7 days",
	"KafkaDiskGuardExpiredRetainedBytesHigh": "purged segments wait for a retention check the broker runs hourly",
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

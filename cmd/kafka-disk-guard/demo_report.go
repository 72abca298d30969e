package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/forecast"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/human"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/simbroker"
)

// demoLog is the demo's slog handler: it tells a person what the guard
// decides. The records the enforcer and the simulated broker log for each
// band change, planned or performed deletion, protection change and
// scenario phase become one compact line each on out (demoLines); any
// other record at warn or above goes to errOut as the text handler writes
// it; the rest is dropped. A healthy demo writes nothing to errOut.
type demoLog struct {
	out   *lineWriter
	warn  slog.Handler
	attrs []slog.Attr
	group bool // attributes are grouped: not ours to render
}

// lineWriter writes whole timestamped lines, one goroutine at a time;
// while held it queues them (until the demo has printed its introduction).
type lineWriter struct {
	mu    sync.Mutex
	w     io.Writer
	held  bool
	queue []string
}

func (l *lineWriter) line(at time.Time, text string) {
	s := at.Format("15:04:05") + "  " + text + "\n"
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held {
		l.queue = append(l.queue, s)
		return
	}
	io.WriteString(l.w, s)
}

// release writes the queued lines and stops holding.
func (l *lineWriter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.queue {
		io.WriteString(l.w, s)
	}
	l.held, l.queue = false, nil
}

func newDemoLog(out *lineWriter, errOut io.Writer) *demoLog {
	return &demoLog{out: out, warn: slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn})}
}

func (h *demoLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *demoLog) Handle(ctx context.Context, r slog.Record) error {
	if render, ok := demoLines[r.Message]; ok && !h.group {
		a := make(map[string]slog.Value, len(h.attrs)+r.NumAttrs())
		for _, x := range h.attrs {
			a[x.Key] = x.Value.Resolve()
		}
		r.Attrs(func(x slog.Attr) bool {
			a[x.Key] = x.Value.Resolve()
			return true
		})
		h.out.line(r.Time, render(demoAttrs(a)))
		return nil
	}
	if r.Level >= slog.LevelWarn {
		return h.warn.Handle(ctx, r)
	}
	return nil
}

func (h *demoLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	c.warn = h.warn.WithAttrs(attrs)
	return &c
}

func (h *demoLog) WithGroup(name string) slog.Handler {
	c := *h
	c.group, c.warn = true, h.warn.WithGroup(name)
	return &c
}

// demoAttrs are a record's attributes by key.
type demoAttrs map[string]slog.Value

func (a demoAttrs) str(k string) string { return a[k].String() }
func (a demoAttrs) int(k string) int64 {
	if v, ok := a[k]; ok && v.Kind() == slog.KindInt64 {
		return v.Int64()
	}
	return 0
}
func (a demoAttrs) pct(k string) string {
	if v, ok := a[k]; ok && v.Kind() == slog.KindFloat64 {
		return fmt.Sprintf("%.1f%%", v.Float64())
	}
	return "?"
}
func (a demoAttrs) dryRun() bool {
	v, ok := a["dry_run"]
	return ok && v.Kind() == slog.KindBool && v.Bool()
}

// demoLines renders each record the demo tells, by message.
var demoLines = map[string]func(demoAttrs) string{
	"band changed":              bandLine,
	"would delete records":      deletionLine,
	"deleted records":           deletionLine,
	"deleted unexpired records": deletionLine,
	"write protection on":       protectionLine,
	"write protection off":      protectionLine,
	"producers refused": func(a demoAttrs) string {
		return fmt.Sprintf("    simulated producers of %s refused: %s", a.str("topic"), a.str("error"))
	},
	"producers accepted": func(a demoAttrs) string {
		return fmt.Sprintf("    simulated producers of %s accepted again", a.str("topic"))
	},
	"scenario phase": scenarioLine,
}

// bandLine: "usage 75.4%: band periodic (was scheduled): delete eligible
// segments until usage < 75%".
func bandLine(a demoAttrs) string {
	what := map[string]string{
		string(enforcer.ActionNone):          "nothing to do",
		string(enforcer.ActionRetention):     "Kafka's own retention frees space",
		string(enforcer.ActionScheduled):     "eligible segments are deleted once a day (enforcer.schedule)",
		string(enforcer.ActionPeriodic):      "delete eligible segments until usage < " + a.pct("target_percent"),
		string(enforcer.ActionPurge):         "delete the oldest segments, expired or not, until usage < " + a.pct("target_percent"),
		string(enforcer.ActionPurgeFraction): "purge part of each partition, oldest first, until usage < " + a.pct("target_percent"),
		string(enforcer.ActionProtect):       "write-protect the log dir's topics, and keep freeing space",
	}[a.str("action")]
	was := ""
	if from := a.str("from_band"); from != "" {
		was = " (was " + from + ")"
	}
	return fmt.Sprintf("usage %s: band %s%s: %s", a.pct("usage_percent"), a.str("band"), was, what)
}

// deletionLine: "would delete orders-1 up to offset 20970: 1 segment,
// 1.0 MiB, expired (retention_time)".
func deletionLine(a demoAttrs) string {
	verb := "deleted"
	if a.dryRun() {
		verb = "would delete"
	}
	n, bytes, unexpired := a.int("segments"), a.int("bytes"), a.int("unexpired_bytes")
	segs := "segments"
	if n == 1 {
		segs = "segment"
	}
	expired := "expired (" + a.str("reason") + ")"
	switch {
	case unexpired == 0 && a.str("reason") == string(enforcer.ActionPurge):
		expired = "expired" // purged oldest first; it had expired anyway
	case unexpired >= bytes:
		expired = "NOT expired"
	case unexpired > 0:
		expired = human.Bytes(unexpired) + " NOT expired"
	}
	return fmt.Sprintf("    %s %s-%d up to offset %d: %d %s, %s, %s", verb, a.str("topic"), a.int("partition"),
		a.int("to_offset"), n, segs, human.Bytes(bytes), expired)
}

// protectionLine: "would write-protect orders: DENY WRITE User:*" (the
// bindings of the topic's shape), or the quota strategy's throttle.
func protectionLine(a demoAttrs) string {
	on := a.str("action") == string(enforcer.ActionProtect)
	var verb string
	switch {
	case on && a.dryRun():
		verb = "would write-protect"
	case on:
		verb = "write-protected"
	case a.dryRun():
		verb = "would lift write protection from"
	default:
		verb = "lifted write protection from"
	}
	if a.str("strategy") == enforcer.StrategyQuota {
		return fmt.Sprintf("    %s every producer (default client quota %d B/s)", verb, a.int("producer_byte_rate"))
	}
	var acls []string
	if v, ok := a["acls"]; ok {
		if list, ok := v.Any().([]string); ok {
			acls = list
		}
	}
	return fmt.Sprintf("    %s %s: %s", verb, a.str("topic"), strings.Join(acls, ", "))
}

func scenarioLine(a demoAttrs) string {
	topic, usage := a.str("topic"), a.pct("usage_percent")
	switch simbroker.Phase(a.str("phase")) {
	case simbroker.PhaseFill:
		return fmt.Sprintf("scenario: a replay floods %s, faster and faster, until the disk is %s full", topic, a.pct("peak_percent"))
	case simbroker.PhaseEbb:
		why := map[string]string{
			simbroker.StopPeak:    "it reached " + usage,
			simbroker.StopRefused: "write protection refused it, the producer gave up",
			simbroker.StopMaxFill: "the guard held usage at " + usage,
		}[a.str("stopped")]
		return fmt.Sprintf("scenario: the replay stops (%s); %s's own retention frees the space", why, topic)
	}
	if a.int("cycle") == 0 {
		return fmt.Sprintf("scenario: calm; in %s a replay floods %s", a.str("next_fill_in"), topic)
	}
	return fmt.Sprintf("scenario: usage is back under %s (%s); the next replay starts in %s", a.pct("low_percent"), usage, a.str("next_fill_in"))
}

// demoAlertRatio is where the KafkaDiskGuardDiskUsageHigh alert fires
// (spec R2.2: keep usage at or below 70%).
const demoAlertRatio = 0.70

// demoPoll is how often the demo looks at the latest snapshot. It polls
// rather than reading the agent's Updated channel, whose one slot belongs
// to the enforcer.
const demoPoll = 100 * time.Millisecond

// waitFirstSnapshot waits for the agent's first full scan; false if ctx
// ended first.
func waitFirstSnapshot(ctx context.Context, a *agent.Agent) bool {
	t := time.NewTicker(demoPoll / 2)
	defer t.Stop()
	for a.Snapshot() == nil {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// narrateUsage prints a line each time the log dirs' usage crosses 70%,
// and a summary line every period, until ctx ends. The summary line ends
// with the projection (spec R3.8) at the ingress the agent observed; the
// demo's time runs fast, so its ingress estimate is the median of 5 s
// rates over 30 s rather than the agent's 5 min over an hour.
func narrateUsage(ctx context.Context, out *lineWriter, a *agent.Agent, period time.Duration) error {
	t := time.NewTicker(demoPoll)
	defer t.Stop()
	rates := forecast.NewRates(forecast.RateConfig{BucketWidth: 5 * time.Second, Buckets: 6})
	above := false
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		snap := a.Snapshot()
		if snap == nil {
			continue
		}
		rates.Observe(snap)
		var sum agent.Summary
		var used, capacity uint64
		var pending int64
		for _, ld := range snap.LogDirs {
			used += ld.Usage.UsedBytes
			capacity += ld.Usage.CapacityBytes
			pending += ld.PendingDeleteBytes
			for _, ts := range ld.TopicSummaries() {
				sum.Add(ts.Summary)
			}
		}
		ratio := 0.0
		if capacity > 0 {
			ratio = float64(used) / float64(capacity)
		}
		switch {
		case !above && ratio >= demoAlertRatio:
			out.line(snap.Time, fmt.Sprintf("usage %.1f%%: past 70%%, the recommended ceiling; the KafkaDiskGuardDiskUsageHigh alert fires", 100*ratio))
		case above && ratio < demoAlertRatio:
			out.line(snap.Time, fmt.Sprintf("usage %.1f%%: back under 70%%", 100*ratio))
		}
		above = ratio >= demoAlertRatio
		if now := time.Now(); now.Sub(last) >= period {
			last = now
			out.line(snap.Time, fmt.Sprintf("used %s of %s (%.1f%%)  segments: %d open, %d closed, %d eligible  expired still on disk %s  pending delete %s%s",
				human.Bytes(int64(used)), human.Bytes(int64(capacity)), 100*ratio, sum.Segments.Open, sum.Segments.Closed, sum.Segments.Eligible,
				human.Bytes(sum.Expired.OpenSegment+sum.Expired.AwaitingDeletion), human.Bytes(pending), demoProjection(snap, rates)))
		}
	}
}

// demoProjection is the summary line's projection of the first log dir
// with a capacity: steady-state usage, the ingress it assumes, and the
// time to the purge band (85%, the demo's cloud profile).
func demoProjection(snap *agent.Snapshot, rates *forecast.Rates) string {
	est := rates.Snapshot()
	if len(est) == 0 {
		return "  projection: estimating ingress"
	}
	for _, d := range forecast.Project(snap, est) {
		if !d.Known {
			continue
		}
		s := fmt.Sprintf("  projected %.1f%% at %s/s", 100*d.ProjectedRatio(), human.Bytes(int64(d.IngressBytesPerSecond)))
		if t, ok := d.TimeTo(0.85); ok && t > 0 {
			s += fmt.Sprintf(", 85%% in %s", t.Round(time.Second))
		}
		return s
	}
	return ""
}

// firstUsage is the usage ratio of the agent's first log dir, as the
// guard sees it (false before the first scan).
func firstUsage(a *agent.Agent) (float64, bool) {
	s := a.Snapshot()
	if s == nil || len(s.LogDirs) == 0 || s.LogDirs[0].Usage.CapacityBytes == 0 {
		return 0, false
	}
	return s.LogDirs[0].Usage.Ratio(), true
}

// printSimulation says what the simulated broker does.
func printSimulation(w io.Writer, dir string, c demoConfig, b simbroker.Config) {
	fmt.Fprintf(w, "Generated a broker log dir in %s (capacity %s). A simulated broker writes to it\n", dir, human.Bytes(int64(c.capacity)))
	fmt.Fprintf(w, "as Kafka would: records appended every %s, segments rolled, a retention check every %s\n", c.interval, b.RetentionCheck)
	fmt.Fprintf(w, "(the first after %s), .deleted files removed %s later; its admin API answers the guard.\n", b.InitialDelay, b.FileDeleteDelay)
}

// printScenario says what the enforcer and the scenario (nil: none) do.
func printScenario(w io.Writer, ec enforcer.Config, sc *simbroker.Scenario, cs agent.ConfigSet) {
	switch {
	case ec.Enabled:
		fmt.Fprintln(w, "The enforcer enforces (--enforce): it deletes records and write-protects topics through the simulated broker's admin API.")
	case sc != nil:
		fmt.Fprintln(w, "The enforcer runs in observe mode (the default): it says what it would do, and does nothing; --enforce lets it act.")
	default:
		fmt.Fprintln(w, "The enforcer runs in observe mode: it says what it would do, and does nothing.")
	}
	if p, err := enforcer.ProfileFor(ec); err == nil {
		var bands []string
		for _, b := range p.Bands[1:] {
			bands = append(bands, fmt.Sprintf("%.0f%% %s", 100*b.From, b.Name))
		}
		fmt.Fprintf(w, "Bands (profile %s): %s; the usage alert fires at 70%%.\n", p.Name, strings.Join(bands, ", "))
	}
	if sc != nil {
		ret := time.Duration(cs.For(sc.Topic).RetentionMs) * time.Millisecond
		fmt.Fprintf(w, "Scenario: in %s a replay floods %s (retention.ms %s) faster and faster until the disk is %.0f%% full;\n",
			sc.FirstCalm, sc.Topic, ret, 100*sc.Peak)
		fmt.Fprintln(w, "then its retention frees the space, and after a calm it starts again.")
	}
	fmt.Fprintln(w, "Ctrl-C to stop.")
	fmt.Fprintln(w)
}

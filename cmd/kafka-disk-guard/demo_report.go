package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
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
// decides. The typed events the enforcer and the simulated broker attach
// to their records (enforcer.Event, simbroker.Event: each band change,
// planned or performed deletion, protection change, producers refused or
// accepted, scenario phase) become one compact line each on out; a
// failed action, and any other record at warn or above, goes to errOut as
// the text handler writes it; the rest is dropped. A healthy demo writes
// nothing to errOut.
type demoLog struct {
	out   *lineWriter
	warn  slog.Handler
	group bool // attributes are grouped: not ours to render
	// main is the log dir the scenario fills; band changes of the others
	// name their log dir. moves: when each move was last told (the mover
	// plans the same moves every pass in observe mode).
	main  string
	moves *movesTold
}

// movesTold remembers the moves told (partition, from, to), so each is
// told once a minute.
type movesTold struct {
	mu   sync.Mutex
	last map[enforcer.Move]time.Time
}

// first reports whether m was not told in the last minute, and notes it.
func (t *movesTold) first(m enforcer.Move, at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[enforcer.Move]time.Time{}
	}
	key := enforcer.Move{Topic: m.Topic, Partition: m.Partition, From: m.From, To: m.To}
	if prev, ok := t.last[key]; ok && at.Sub(prev) < time.Minute {
		return false
	}
	t.last[key] = at
	return true
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
	return &demoLog{out: out, warn: slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}), moves: &movesTold{}}
}

func (h *demoLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *demoLog) Handle(ctx context.Context, r slog.Record) error {
	line := ""
	if !h.group {
		r.Attrs(func(x slog.Attr) bool {
			line = h.narrate(x, r.Time)
			return line == ""
		})
	}
	if line != "" {
		h.out.line(r.Time, line)
		return nil
	}
	if r.Level >= slog.LevelWarn {
		return h.warn.Handle(ctx, r)
	}
	return nil
}

func (h *demoLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.warn = h.warn.WithAttrs(attrs)
	return &c
}

func (h *demoLog) WithGroup(name string) slog.Handler {
	c := *h
	c.group, c.warn = true, h.warn.WithGroup(name)
	return &c
}

// narrate renders the event a record's attribute carries; "" when it
// carries none, a failed action (told on errOut), or a move told in the
// last minute.
func (h *demoLog) narrate(x slog.Attr, at time.Time) string {
	switch ev := enforcer.Event(x).(type) {
	case enforcer.BandChange:
		if h.main != "" && ev.LogDir != h.main {
			return filepath.Base(ev.LogDir) + ": " + bandLine(ev)
		}
		return bandLine(ev)
	case enforcer.DeletionDone:
		if ev.Err == nil {
			return deletionLine(ev)
		}
	case enforcer.ProtectionChange:
		if ev.Err == nil {
			return protectionLine(ev)
		}
	case enforcer.CordonDone:
		if ev.Err == nil {
			return cordonLine(ev)
		}
	case enforcer.MoveDone:
		if ev.Err == nil && h.moves.first(ev.Move, at) {
			return moveLine(ev)
		}
	}
	switch ev := simbroker.Event(x).(type) {
	case simbroker.PhaseChange:
		return scenarioLine(ev)
	case simbroker.ProducersChange:
		if ev.Refused != "" {
			return fmt.Sprintf("    simulated producers of %s refused: %s", ev.Topic, ev.Refused)
		}
		return fmt.Sprintf("    simulated producers of %s accepted again", ev.Topic)
	}
	return ""
}

// pct renders a ratio as the logs do: a percentage with one decimal.
func pct(ratio float64) string { return fmt.Sprintf("%.1f%%", math.Round(1000*ratio)/10) }

// bandLine: "usage 75.4%: band periodic (was scheduled): delete eligible
// segments until usage < 75%".
func bandLine(ev enforcer.BandChange) string {
	target := "?"
	if ev.Band.Target > 0 {
		target = pct(ev.Band.Target)
	}
	what := map[enforcer.Action]string{
		enforcer.ActionNone:          "nothing to do",
		enforcer.ActionRetention:     "Kafka's own retention frees space",
		enforcer.ActionScheduled:     "eligible segments are deleted once a day (enforcer.schedule)",
		enforcer.ActionPeriodic:      "delete eligible segments until usage < " + target,
		enforcer.ActionPurge:         "delete the oldest segments, expired or not, until usage < " + target,
		enforcer.ActionPurgeFraction: "purge part of each partition, oldest first, until usage < " + target,
		enforcer.ActionProtect:       "write-protect the log dir's topics, and keep freeing space",
	}[ev.Band.Action]
	was := ""
	if ev.FromBand != "" {
		was = " (was " + ev.FromBand + ")"
	}
	return fmt.Sprintf("usage %s: band %s%s: %s", pct(ev.Usage), ev.Band.Name, was, what)
}

// deletionLine: "would delete orders-1 up to offset 20970: 1 segment,
// 1.0 MiB, expired (retention_time)".
func deletionLine(ev enforcer.DeletionDone) string {
	verb := "deleted"
	if ev.DryRun {
		verb = "would delete"
	}
	n, bytes, unexpired := ev.Segments, ev.Bytes, ev.UnexpiredBytes
	segs := "segments"
	if n == 1 {
		segs = "segment"
	}
	expired := "expired (" + ev.Reason + ")"
	switch {
	case unexpired == 0 && ev.Reason == string(enforcer.ActionPurge):
		expired = "expired" // purged oldest first; it had expired anyway
	case unexpired >= bytes:
		expired = "NOT expired"
	case unexpired > 0:
		expired = human.Bytes(unexpired) + " NOT expired"
	}
	return fmt.Sprintf("    %s %s-%d up to offset %d: %d %s, %s, %s", verb, ev.Topic, ev.Partition,
		ev.Offset, n, segs, human.Bytes(bytes), expired)
}

// protectionLine: "would write-protect orders: DENY WRITE User:*" (the
// bindings of the topic's shape), or the quota strategy's throttle.
func protectionLine(ev enforcer.ProtectionChange) string {
	var verb string
	switch {
	case ev.On && ev.DryRun:
		verb = "would write-protect"
	case ev.On:
		verb = "write-protected"
	case ev.DryRun:
		verb = "would lift write protection from"
	default:
		verb = "lifted write protection from"
	}
	if ev.Strategy == enforcer.StrategyQuota {
		return fmt.Sprintf("    %s every producer (default client quota %d B/s)", verb, ev.ProducerByteRate)
	}
	acls := make([]string, 0, len(ev.ACLs))
	for _, a := range ev.ACLs {
		acls = append(acls, a.Permission+" "+a.Operation+" "+a.Principal)
	}
	return fmt.Sprintf("    %s %s: %s", verb, ev.Topic, strings.Join(acls, ", "))
}

// cordonLine: "would cordon kafka-logs (usage 75.4%): Kafka would place no
// new partition in it (cordoned.log.dirs)".
func cordonLine(ev enforcer.CordonDone) string {
	switch {
	case ev.Cordon && ev.DryRun:
		return fmt.Sprintf("    would cordon %s (usage %s): Kafka would place no new partition in it (cordoned.log.dirs)", filepath.Base(ev.LogDir), pct(ev.Usage))
	case ev.Cordon:
		return fmt.Sprintf("    cordoned %s (usage %s): Kafka places no new partition in it (cordoned.log.dirs)", filepath.Base(ev.LogDir), pct(ev.Usage))
	}
	return fmt.Sprintf("    uncordoned %s (usage %s): new partitions may be placed in it again", filepath.Base(ev.LogDir), pct(ev.Usage))
}

// moveLine: "would move orders-1 from 1 to 2: 1.00 MiB, cold;
// the batch copies in 12s at the throttle, before the purge band".
func moveLine(ev enforcer.MoveDone) string {
	verb := "moving"
	if ev.DryRun {
		verb = "would move"
	}
	heat := "warm"
	if ev.Cold {
		heat = "cold"
	}
	return fmt.Sprintf("    %s %s-%d from %s to %s: %s, %s; the batch copies in %s at the throttle, before the purge band",
		verb, ev.Topic, ev.Partition, filepath.Base(ev.From), filepath.Base(ev.To), human.Bytes(ev.Bytes), heat, ev.Duration.Round(time.Second))
}

func scenarioLine(ev simbroker.PhaseChange) string {
	topic, usage := ev.Topic, pct(ev.Usage)
	switch ev.Phase {
	case simbroker.PhaseFill:
		return fmt.Sprintf("scenario: a replay floods %s, faster and faster, until the disk is %s full", topic, pct(ev.Peak))
	case simbroker.PhaseEbb:
		why := map[string]string{
			simbroker.StopPeak:    "it reached " + usage,
			simbroker.StopRefused: "write protection refused it, the producer gave up",
			simbroker.StopMaxFill: "the guard held usage at " + usage,
		}[ev.Stopped]
		return fmt.Sprintf("scenario: the replay stops (%s); %s's own retention frees the space", why, topic)
	}
	if ev.Cycle == 0 {
		return fmt.Sprintf("scenario: calm; in %s a replay floods %s", ev.NextFill, topic)
	}
	return fmt.Sprintf("scenario: usage is back under %s (%s); the next replay starts in %s", pct(ev.Low), usage, ev.NextFill)
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

// narrateUsage prints a line each time the usage of main (the log dir
// the scenario fills; "": of every log dir) crosses 70%,
// and a summary line every period, until ctx ends. The summary line ends
// with the projection (spec R3.8) at the ingress the agent observed; the
// demo's time runs fast, so its ingress estimate is the median of 5 s
// rates over 30 s rather than the agent's 5 min over an hour.
func narrateUsage(ctx context.Context, out *lineWriter, a *agent.Agent, period time.Duration, main string) error {
	t := time.NewTicker(demoPoll)
	defer t.Stop()
	rates := forecast.NewRates(forecast.RateConfig{BucketWidth: 5 * time.Second, Buckets: 6})
	above, foreseen := false, false
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
		// The usage of main (the log dir the scenario fills) or of every
		// log dir (a real broker), the segments of all.
		var sum agent.Summary
		var used, capacity uint64
		var pending int64
		for _, ld := range snap.LogDirs {
			if main == "" || ld.Path == main {
				used += ld.Usage.UsedBytes
				capacity += ld.Usage.CapacityBytes
				pending += ld.PendingDeleteBytes
			}
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
		if f, ok := demoForesee(snap, rates, main); ok != foreseen {
			foreseen = ok
			if ok && ratio < demoPurgeBand {
				out.line(snap.Time, f)
			}
		}
		if now := time.Now(); now.Sub(last) >= period {
			last = now
			out.line(snap.Time, fmt.Sprintf("used %s of %s (%.1f%%)  segments: %d open, %d closed, %d eligible  expired still on disk %s  pending delete %s%s",
				human.Bytes(int64(used)), human.Bytes(int64(capacity)), 100*ratio, sum.Segments.Open, sum.Segments.Closed, sum.Segments.Eligible,
				human.Bytes(sum.Expired.OpenSegment+sum.Expired.AwaitingDeletion), human.Bytes(pending), demoProjection(snap, rates)))
		}
	}
}

// demoPurgeBand is the demo's first purge band (cloud profile).
const demoPurgeBand = 0.85

// demoForesee is the foresee rung's line (spec R3.8) when the projection
// of main (or the first log dir with a capacity) reaches the purge band:
// "foresee: projected 93.9% at 3.07 MiB/s, past the 85% purge band: 85%
// in 19s".
func demoForesee(snap *agent.Snapshot, rates *forecast.Rates, main string) (string, bool) {
	est := rates.Snapshot()
	if len(est) == 0 {
		return "", false
	}
	for _, d := range forecast.Project(snap, est) {
		if !d.Known || main != "" && d.Path != main {
			continue
		}
		if d.ProjectedRatio() < demoPurgeBand {
			return "", false
		}
		s := fmt.Sprintf("foresee: projected %.1f%% at %s/s, past the %.0f%% purge band", 100*d.ProjectedRatio(),
			human.Bytes(int64(d.IngressBytesPerSecond)), 100*demoPurgeBand)
		if t, ok := d.TimeTo(demoPurgeBand); ok && t > 0 {
			s += fmt.Sprintf(": %.0f%% in %s", 100*demoPurgeBand, t.Round(time.Second))
		}
		return s + "; the PurgeForeseen alert fires if it holds for an hour", true
	}
	return "", false
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

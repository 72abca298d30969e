package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// scanLoop refreshes the snapshot by periodic full scans. It stands in for
// the agent's live watcher: swap it for the watcher (same Snapshot method)
// once that exists.
type scanLoop struct {
	scanner  *agent.Scanner
	dirs     []string
	capacity uint64 // configured capacity per log dir; 0: the filesystem's
	configs  func() agent.ConfigSet
	before   func(time.Time) error // runs before each scan (the demo's simulator)
	interval time.Duration
	now      func() time.Time

	snap    atomic.Pointer[agent.Snapshot]
	rescans map[string]uint64
	// appended bytes per partition directory, derived from segment growth
	// between scans (the watcher will own this).
	prev     map[string]partitionSize
	appended map[string]uint64
	rates    map[string]float64
	lastScan time.Time
}

type partitionSize struct {
	activeBase  int64
	activeBytes int64
}

func newScanLoop(scanner *agent.Scanner, dirs []string, capacity uint64, configs func() agent.ConfigSet, interval time.Duration) *scanLoop {
	return &scanLoop{
		scanner: scanner, dirs: dirs, capacity: capacity, configs: configs, interval: interval, now: time.Now,
		rescans: map[string]uint64{}, prev: map[string]partitionSize{}, appended: map[string]uint64{}, rates: map[string]float64{},
	}
}

// Snapshot implements exporter.SnapshotSource.
func (l *scanLoop) Snapshot() *agent.Snapshot { return l.snap.Load() }

// Run scans every interval until ctx is done. Call scan("start") first.
func (l *scanLoop) Run(ctx context.Context) error {
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := l.scan("periodic"); err != nil {
				return err
			}
		}
	}
}

// scan runs one full scan and publishes the snapshot.
func (l *scanLoop) scan(trigger string) error {
	start := l.now()
	if l.before != nil {
		if err := l.before(start); err != nil {
			return err
		}
	}
	dt, first := start.Sub(l.lastScan).Seconds(), l.lastScan.IsZero()
	l.lastScan = start
	dirs := make([]agent.LogDir, 0, len(l.dirs))
	for _, d := range l.dirs {
		ld := l.scanner.ScanLogDir(d)
		if ld.Err == nil {
			u, err := agent.DiskUsage(d, l.capacity, ld.DiskBytes)
			if err != nil {
				ld.Err = err
			}
			ld.Usage = u
		}
		l.trackAppends(&ld, dt, first)
		dirs = append(dirs, ld)
	}
	end := l.now()
	l.rescans[trigger]++
	rescans := make(map[string]uint64, len(l.rescans))
	for k, v := range l.rescans {
		rescans[k] = v
	}
	snap := agent.BuildSnapshot(end, dirs, l.configs(), agent.Health{
		LastFullScan:         end,
		LastFullScanDuration: end.Sub(start),
		ScanErrors:           l.scanner.Errors(),
		Rescans:              rescans,
	})
	l.snap.Store(&snap)
	return nil
}

// trackAppends fills AppendedBytes and WriteRateBytesPerSecond from the
// growth of each live partition's active segment since the previous scan
// (a rolled segment counts its whole size past the previous active offset).
func (l *scanLoop) trackAppends(ld *agent.LogDir, dt float64, first bool) {
	for i := range ld.Partitions {
		p := &ld.Partitions[i]
		if p.Kind != agent.KindLive || len(p.Segments) == 0 {
			continue
		}
		key := ld.Path + "/" + p.Dir
		act := p.Segments[len(p.Segments)-1]
		cur := partitionSize{activeBase: act.BaseOffset, activeBytes: act.LogBytes}
		prev, seen := l.prev[key]
		l.prev[key] = cur
		if seen && !first {
			var grown int64
			for _, s := range p.Segments {
				switch {
				case s.BaseOffset == prev.activeBase:
					grown += max(0, s.LogBytes-prev.activeBytes)
				case s.BaseOffset > prev.activeBase:
					grown += s.LogBytes
				}
			}
			l.appended[key] += uint64(grown)
			if dt > 0 {
				// exponentially weighted, about a minute of memory
				alpha := min(1, dt/60)
				l.rates[key] = (1-alpha)*l.rates[key] + alpha*float64(grown)/dt
			}
		}
		p.AppendedBytes = l.appended[key]
		p.WriteRateBytesPerSecond = l.rates[key]
	}
}

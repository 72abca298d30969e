package enforcer

import (
	"math"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// Purge accounting and feedback (spec R7.3).
//
// Caps: every purge's unexpired bytes are remembered with the monotonic
// time (a wall clock that jumps does not empty the windows); observe sums
// the last hour and day per log dir into Observed.Purged.
//
// Feedback: after the guard's deletions in a log dir, the bytes deleted
// leave the log dir once the broker has removed the segments (its next
// retention check, then file.delete.delay.ms). The filesystem's used bytes
// must fall with them. When they do not, the bytes stayed used outside
// the log dirs (agent.FilesystemBytes.Outside grows by them): files
// deleted but held open by a process, or a volume that is not what statfs
// measures. Once the deleted segments are gone, Outside is sampled for
// verifyWindow and its least growth taken (writes between the two clocks
// of the figures only inflate it); a growth above half the bytes deleted
// marks the log dir purge_ineffective: nothing unexpired is purged there.
// The hold clears when Outside falls back within half of them for
// verifyWindow (the space came back: the process holding the files closed
// them or was restarted), when a later deletion there (eligible segments
// still go) is effective, or when the guard restarts. Only log dirs whose
// usage is their filesystem's are checked (with a configured capacity,
// usage is the bytes under the log dir and falls with them), and only
// deletions of at least 1 MiB and 1% of the filesystem: other writers on
// a shared filesystem move Outside too.
const (
	// verifyWindow: how long the figures are watched before a verdict.
	verifyWindow = 5 * time.Second
	// verifyTimeout: a check whose segments are not gone by then is
	// dropped without a verdict.
	verifyTimeout = 30 * time.Minute
	// minVerifyBytes: deletions smaller than this, or than 1% of the
	// filesystem, are not checked (noise of other writers).
	minVerifyBytes = 1 << 20
)

// purgeCheck is the guard's deletions in one log dir in one pass, waiting
// to be verified on disk.
type purgeCheck struct {
	dir     string
	offsets map[TopicPartition]int64 // the new log start offsets
	bytes   int64                    // disk bytes of the segments deleted
	outside int64                    // the filesystem's Outside() before
	at      time.Duration            // monotonic time of the deletion
	goneAt  time.Duration            // when the segments were seen gone (0: not yet)
	grown   int64                    // least growth of Outside seen since
}

// ineffective is a log dir whose deletions did not free space.
type ineffective struct {
	baseline, bytes int64
	lowSince        time.Duration // Outside back within bytes/2 since (0: not)
}

// recordDeletions remembers the pass's deletions (or, in observe mode,
// those that would have been performed): their unexpired bytes for the
// caps, failed ones included, and, when enforcing, the bytes the
// successful ones deleted per log dir for the feedback.
func (e *Enforcer) recordDeletions(o Observed, dels []Deletion, failed map[TopicPartition]bool) {
	ev := &e.ev
	mono := ev.lastMono
	checks := map[string]*purgeCheck{}
	var order []string
	for _, d := range dels {
		tp := TopicPartition{d.Topic, d.Partition}
		if d.UnexpiredBytes > 0 {
			// A failed deletion counts too: a call whose reply was lost
			// (a timeout, a controller move) may have taken effect, and
			// the caps bound what may have been purged (the safe side).
			ev.purges = append(ev.purges, purgeRecord{at: mono, dir: d.LogDir, bytes: d.UnexpiredBytes})
		}
		if failed[tp] || e.dryRun {
			continue
		}
		c, ok := checks[d.LogDir]
		if !ok {
			c = &purgeCheck{dir: d.LogDir, offsets: map[TopicPartition]int64{}, at: mono}
			checks[d.LogDir] = c
			order = append(order, d.LogDir)
		}
		c.offsets[tp] = d.Offset
		c.bytes += d.Bytes
	}
	if len(order) == 0 {
		return
	}
	fs := filesystemsByDir(o.Snapshot)
	basis := map[string]agent.CapacityBasis{}
	for _, ld := range o.Snapshot.LogDirs {
		basis[ld.Path] = ld.Usage.Basis
	}
	for _, dir := range order {
		c := checks[dir]
		f, ok := fs[dir]
		if !ok || basis[dir] == agent.CapacityConfigured || c.bytes < max(minVerifyBytes, int64(f.TotalBytes)/100) {
			// The filesystem is not known; usage is the bytes under the
			// log dir (it falls with them by construction); or too little
			// to tell from other writers on the filesystem.
			continue
		}
		c.outside = f.Outside()
		ev.checks = append(ev.checks, *c)
	}
}

// purged sums the unexpired bytes purged per log dir over the last hour
// and day, dropping older records.
func (e *Enforcer) purged(mono time.Duration) map[string]Purged {
	ev := &e.ev
	out := map[string]Purged{}
	kept := ev.purges[:0]
	for _, r := range ev.purges {
		age := mono - r.at
		if age >= 24*time.Hour || age < 0 {
			continue
		}
		kept = append(kept, r)
		p := out[r.dir]
		p.Day += r.bytes
		if age < time.Hour {
			p.Hour += r.bytes
		}
		out[r.dir] = p
	}
	ev.purges = kept
	for dir, p := range out {
		e.m.ev.purgedWindow.WithLabelValues(dir, "1h").Set(float64(p.Hour))
		e.m.ev.purgedWindow.WithLabelValues(dir, "24h").Set(float64(p.Day))
	}
	return out
}

// verifyPurges judges the deletions waiting for a verdict and returns the
// log dirs held as purge_ineffective.
func (e *Enforcer) verifyPurges(snap *agent.Snapshot, mono time.Duration) map[string]bool {
	ev := &e.ev
	if len(ev.checks) == 0 && len(ev.ineffective) == 0 {
		return nil
	}
	fs := filesystemsByDir(snap)
	dirs := map[string]*agent.LogDir{}
	for i := range snap.LogDirs {
		dirs[snap.LogDirs[i].Path] = &snap.LogDirs[i]
	}
	kept := ev.checks[:0]
	for _, c := range ev.checks {
		f, ok := fs[c.dir]
		ld := dirs[c.dir]
		if !ok || ld == nil {
			if mono-c.at < verifyTimeout {
				kept = append(kept, c)
			}
			continue
		}
		if c.goneAt == 0 {
			if !deletedGone(ld, c.offsets) {
				if mono-c.at < verifyTimeout {
					kept = append(kept, c)
				}
				continue
			}
			c.goneAt, c.grown = mono, math.MaxInt64
		}
		c.grown = min(c.grown, f.Outside()-c.outside)
		if mono-c.goneAt < verifyWindow {
			kept = append(kept, c)
			continue
		}
		e.judgePurge(c)
	}
	ev.checks = kept
	return e.ineffectiveDirs(fs, mono)
}

// judgePurge judges a deletion whose segments are gone and whose window
// has passed: where the filesystem's used bytes outside the log dirs grew
// by more than half the deleted bytes, the log dir is held as
// purge_ineffective; otherwise a hold on it ends.
func (e *Enforcer) judgePurge(c purgeCheck) {
	ev := &e.ev
	attrs := []any{"log_dir", c.dir, "deleted_bytes", c.bytes, "outside_log_dirs_growth_bytes", c.grown}
	if c.grown > c.bytes/2 {
		e.m.ev.purgeChecks.WithLabelValues("ineffective").Inc()
		if ev.ineffective == nil {
			ev.ineffective = map[string]ineffective{}
		}
		if _, held := ev.ineffective[c.dir]; !held {
			e.logger.Warn("deleted segments are gone from the log dir but the filesystem's used bytes did not fall: purging stopped",
				append(attrs, "reason", BlockPurgeIneffective,
					"hint", "files deleted but still held open (lsof +L1), or usage measured on another volume")...)
		}
		ev.ineffective[c.dir] = ineffective{baseline: c.outside, bytes: c.bytes}
		return
	}
	e.m.ev.purgeChecks.WithLabelValues("effective").Inc()
	e.logger.Debug("deletions freed their bytes", attrs...)
	if _, held := ev.ineffective[c.dir]; held {
		// Usage behaves again: deletions (eligible segments, which the
		// hold does not stop) free their bytes.
		delete(ev.ineffective, c.dir)
		e.logger.Info("deletions free space again: purging allowed again", "log_dir", c.dir)
	}
}

// ineffectiveDirs returns the log dirs held as purge_ineffective; a hold
// ends once the bytes outside the log dirs stayed back near the baseline
// for a window.
func (e *Enforcer) ineffectiveDirs(fs map[string]agent.FilesystemBytes, mono time.Duration) map[string]bool {
	ev := &e.ev
	var out map[string]bool
	for dir, st := range ev.ineffective {
		f, ok := fs[dir]
		switch {
		case ok && f.Outside() <= st.baseline+st.bytes/2:
			if st.lowSince == 0 {
				st.lowSince = mono
			}
			if mono-st.lowSince >= verifyWindow {
				delete(ev.ineffective, dir)
				e.logger.Info("the space deleted segments held came back: purging allowed again", "log_dir", dir)
				continue
			}
		default:
			st.lowSince = 0
		}
		ev.ineffective[dir] = st
		if out == nil {
			out = map[string]bool{}
		}
		out[dir] = true
	}
	return out
}

// deletedGone reports whether the segments below each new log start
// offset are gone from the log dir, their .deleted files included (a
// partition gone from the log dir is gone with its segments).
func deletedGone(ld *agent.LogDir, offsets map[TopicPartition]int64) bool {
	for i := range ld.Partitions {
		p := ld.Partitions[i]
		off, ok := offsets[TopicPartition{p.Topic, p.Partition}]
		if !ok || p.Kind != agent.KindLive {
			continue
		}
		if p.PendingDeleteBytes > 0 || (len(p.Segments) > 0 && p.Segments[0].BaseOffset < off) {
			return false
		}
	}
	return true
}

// filesystemsByDir maps each log dir to its filesystem's figures.
func filesystemsByDir(s *agent.Snapshot) map[string]agent.FilesystemBytes {
	out := map[string]agent.FilesystemBytes{}
	for _, f := range s.Filesystems() {
		for _, d := range f.LogDirs {
			out[d] = f
		}
	}
	return out
}

package enforcer

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// The purge caps' windows (spec R7.3) are kept in the agent's record
// (ledger.PurgeBucket): a restart, or a crash loop, does not get a fresh
// budget each time. A purge of unexpired bytes is recorded before it is
// made (recordPurgesAhead): an agent killed right after purging restarts
// with the purge counted.

// purgeHistory is this agent's purges of the last day as buckets: each
// purge counts at the end of its bucket (it stays in the hour window up
// to one bucket longer: the safe side; a bucket still open ends after
// now, and is restored as purged at the restart).
func (e *Enforcer) purgeHistory(now time.Time) []PurgeBucket {
	return e.purgeHistoryWith(now, nil)
}

// purgeHistoryWith is purgeHistory with the deletions' unexpired bytes
// counted as purged now.
func (e *Enforcer) purgeHistoryWith(now time.Time, dels []Deletion) []PurgeBucket {
	mono := e.ev.lastMono
	type key struct {
		dir string
		end time.Time
	}
	sums := map[key]int64{}
	purges := slices.Clone(e.ev.purges)
	for _, d := range dels {
		if d.UnexpiredBytes > 0 {
			purges = append(purges, purgeRecord{at: mono, dir: d.LogDir, bytes: d.UnexpiredBytes})
		}
	}
	for _, r := range purges {
		at := now.Add(-(mono - r.at))
		end := at.Truncate(ledger.PurgeBucketWidth).Add(ledger.PurgeBucketWidth)
		sums[key{r.dir, end.UTC()}] += r.bytes
	}
	out := make([]PurgeBucket, 0, len(sums))
	for k, b := range sums {
		out = append(out, PurgeBucket{LogDir: k.dir, End: k.end, Bytes: b})
	}
	slices.SortFunc(out, func(a, b PurgeBucket) int {
		if c := a.End.Compare(b.End); c != 0 {
			return c
		}
		return strings.Compare(a.LogDir, b.LogDir)
	})
	return out
}

// restorePurges adds the purges of this agent's record (written before a
// restart) to the caps' history, once, at the first read of the ledger.
// It reports whether it added any.
func (e *Enforcer) restorePurges(r Record, now time.Time) bool {
	if e.prot.purgesRestored {
		return false
	}
	e.prot.purgesRestored = true
	mono := e.ev.lastMono
	added := false
	for _, b := range r.Purged {
		age := now.Sub(b.End)
		if age >= 24*time.Hour || b.Bytes <= 0 {
			continue
		}
		e.ev.purges = append(e.ev.purges, purgeRecord{at: mono - max(age, 0), dir: b.LogDir, bytes: b.Bytes})
		added = true
	}
	if added {
		e.logger.Info("purge caps: purges of the last day restored from this agent's record", "buckets", len(r.Purged))
	}
	return added
}

// recordPurgesAhead writes this agent's record with the deletions'
// unexpired bytes counted in its purge history before they are deleted
// (spec R7.3): a purge the record does not hold would be forgotten by a
// restart, and the caps' windows with it. When the record cannot be
// written, the unexpired deletions are held back this pass (the expired
// ones go on); a purge recorded but not made (a deletion failed, the
// agent killed) counts until the next record corrects it: the safe side.
// Without a ledger read (never read, lost) or while standing by, the
// deletions go on as planned.
func (e *Enforcer) recordPurgesAhead(ctx context.Context, now time.Time, dels []Deletion) []Deletion {
	if e.dryRun || e.prot.records == nil || e.prot.ledgerLost || e.prot.standby || !slices.ContainsFunc(dels, isPurge) {
		return dels
	}
	rec := e.clusterRecord()
	rec.Purged = e.purgeHistoryWith(now, dels)
	if ledger.SamePurges(e.clusterRecord().Purged, rec.Purged) {
		return dels
	}
	rec.Instance, rec.Updated = e.instance, now
	if err := e.storeRecord(ctx, rec); err != nil {
		e.logger.Warn("unexpired records not purged this pass: the purge could not be recorded first", "err", err)
		return slices.DeleteFunc(slices.Clone(dels), isPurge)
	}
	return dels
}

// isPurge reports whether a deletion deletes unexpired bytes.
func isPurge(d Deletion) bool { return d.UnexpiredBytes > 0 }

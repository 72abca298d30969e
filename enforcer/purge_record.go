package enforcer

import (
	"slices"
	"strings"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// The purge caps' windows (spec R7.3) are kept in the agent's record
// (ledger.PurgeBucket): a restart, or a crash loop, does not get a fresh
// budget each time.

// purgeHistory is this agent's purges of the last day as buckets: each
// purge counts at the end of its bucket (it stays in the hour window up
// to one bucket longer: the safe side; a bucket still open ends after
// now, and is restored as purged at the restart).
func (e *Enforcer) purgeHistory(now time.Time) []PurgeBucket {
	mono := e.ev.lastMono
	type key struct {
		dir string
		end time.Time
	}
	sums := map[key]int64{}
	for _, r := range e.ev.purges {
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

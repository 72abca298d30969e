package ledger

import (
	"slices"
	"strings"
	"time"
)

// The purge caps' windows (spec R7.3: unexpired bytes purged per hour and
// per day) are kept in the agent's record, so a restart, or a crash loop,
// does not get a fresh budget each time: the record holds the bytes in
// buckets of PurgeBucketWidth per log dir over the last day, and an agent
// restores them from its record at its first read of the ledger.

// PurgeBucketWidth is the width of a bucket of the purge history in the
// record.
const PurgeBucketWidth = 10 * time.Minute

// PurgeBucket is the unexpired bytes purged in a log dir in the bucket
// ending at End (the wall clock of the writer).
type PurgeBucket struct {
	LogDir string    `json:"log_dir"`
	End    time.Time `json:"end"`
	Bytes  int64     `json:"bytes"`
}

// SamePurges reports whether two histories are equal.
func SamePurges(a, b []PurgeBucket) bool {
	return slices.EqualFunc(a, b, func(x, y PurgeBucket) bool {
		return x.LogDir == y.LogDir && x.End.Equal(y.End) && x.Bytes == y.Bytes
	})
}

// MergePurges returns history a with the buckets of b that end after
// since added where a holds fewer bytes for that log dir and end (the
// larger count wins: a and b are two copies of one log dir's history, or
// one lacks buckets of the other), sorted by end and log dir, and whether
// any bucket was added or raised.
func MergePurges(a, b []PurgeBucket, since time.Time) ([]PurgeBucket, bool) {
	out := slices.Clone(a)
	more := false
	for _, x := range b {
		if !x.End.After(since) || x.Bytes <= 0 {
			continue
		}
		i := slices.IndexFunc(out, func(y PurgeBucket) bool { return y.LogDir == x.LogDir && y.End.Equal(x.End) })
		switch {
		case i < 0:
			out, more = append(out, x), true
		case out[i].Bytes < x.Bytes:
			out[i].Bytes, more = x.Bytes, true
		}
	}
	if !more {
		return a, false
	}
	slices.SortFunc(out, func(x, y PurgeBucket) int {
		if c := x.End.Compare(y.End); c != 0 {
			return c
		}
		return strings.Compare(x.LogDir, y.LogDir)
	})
	return out, true
}

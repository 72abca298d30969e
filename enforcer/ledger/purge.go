package ledger

import (
	"slices"
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

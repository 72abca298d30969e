package agent

import (
	"slices"
	"time"
)

// Holds marks, in dirs (a snapshot's own LogDir values; a dir's Partitions
// slice is replaced by a copy before any partition in it changes, and a
// changed partition by a new one: the partitions are shared), the
// partitions whose retention Kafka holds for a reason a partition alone
// does not show, and classifies them again with Partition.Held set, so
// nothing in them is eligible (spec R1.2):
//
//   - HeldLogDirOffline: every partition of a log dir in c.OfflineLogDirs;
//   - HeldMoving: the live and -future logs of a partition with a -future
//     directory in an online log dir, unless the log cleaner is disabled
//     (LogManager.abortAndPauseCleaning pauses only through the cleaner;
//     without it cleanupLogs visits the live log and its -future one as
//     usual).
//
// HeldCleanerDisabled is Classify's own. Partitions already classified
// with the same hold are left as they are.
func (c ConfigSet) Holds(dirs []LogDir, now time.Time) {
	var moving map[TopicPartition]bool
	for i := range dirs {
		if _, off := c.OfflineLogDirs[dirs[i].Path]; off {
			continue
		}
		for j := range dirs[i].Partitions {
			if p := dirs[i].Partitions[j]; p.Kind == KindFuture {
				if moving == nil {
					moving = map[TopicPartition]bool{}
				}
				moving[TopicPartition{p.Topic, p.Partition}] = true
			}
		}
	}
	if moving == nil && len(c.OfflineLogDirs) == 0 {
		return
	}
	for i := range dirs {
		_, offline := c.OfflineLogDirs[dirs[i].Path]
		cloned := false
		for j := range dirs[i].Partitions {
			p := dirs[i].Partitions[j]
			var r Reason
			switch {
			case offline:
				r = HeldLogDirOffline
			case (p.Kind == KindLive || p.Kind == KindFuture) && moving[TopicPartition{p.Topic, p.Partition}] && !c.For(p.Topic).CleanerDisabled:
				r = HeldMoving
			}
			if r == ReasonNone || p.Held == r {
				continue
			}
			if !cloned {
				// The live agent shares a dir's Partitions slice between
				// snapshots while nothing in it changes, and every
				// partition that did not change: a hold goes into a copy
				// of both, so no published snapshot changes and the shared
				// partitions stay unheld (a hold that ends is gone at the
				// next publish).
				dirs[i].Partitions = slices.Clone(dirs[i].Partitions)
				cloned = true
			}
			q := *p
			q.Held = r
			q = Classify(q, c.For(p.Topic), now)
			dirs[i].Partitions[j] = &q
		}
	}
}

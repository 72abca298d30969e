package enforcer

import (
	"context"
	"errors"
	"math"
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
//
// A bucket's age is this process's wall clock less the bucket's end. For
// another instance's record this process watched while standing by
// (followInstance), it is also measured without comparing the two
// processes' wall clocks: the record's lease stamp less the bucket's end
// (both on the writer's clock; the buckets are as of its last write, at
// or after that stamp) plus how long this process has seen that stamp
// (its monotonic clock): no more than the true age while the writer's
// clock ran steady. The younger of the two counts (found by the
// simulation, seed 14012 of the default mix: agent-1's wall clock, two
// hours ahead, aged agent-1b's 56 MiB of purges out of the hour's window
// at the takeover, and agent-1 purged 16 MiB more within the hour).
func (e *Enforcer) restorePurges(r Record, now time.Time) bool {
	if e.prot.purgesRestored {
		return false
	}
	e.prot.purgesRestored, e.prot.historyWait = true, false
	mono := e.ev.lastMono
	watched := otherInstance(r, e.instance) && !r.Renewed.IsZero() && e.prot.self.renewed.Equal(r.Renewed)
	seen := e.monotonic(now) - e.prot.self.since
	added := false
	for _, b := range r.Purged {
		age := now.Sub(b.End)
		if watched {
			age = min(age, r.Renewed.Sub(b.End)+seen)
		}
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
// Without a ledger read (never read, lost), the deletions go on as
// planned, the unexpired ones only while this agent's lease, renewed
// before the loss, is live with its margin (lease fencing); while
// standing by, the unexpired ones wait. Once a write of this agent's
// record succeeded while the ledger is lost (the pass that found the
// topic missing created it again, and still switched protection on with
// the records read before), or failed but for the loss (its reply lost),
// the topic may hold a record a second instance takes over from after
// the lease: purges are recorded first as with a ledger, and wait when
// the record cannot be written or read back (found by the simulation,
// seed 33311 of the default mix: agent-1 wrote its record into the topic
// created again, purged 24 MiB unrecorded, failed every call after;
// agent-1b took over from that record once the lease ran out and purged
// 40 MiB more, 64 MiB in the hour against 51).
//
// The write renews this agent's lease (spec R8.8): the record names this
// instance and Renewed. It is read back, and the unexpired deletions go
// on only if it is still this instance's record with that renewal and
// the lease is live with the margin (leaseLive): a second instance for
// the broker that took the broker over in between (it saw no renewal for
// a lease) wrote its own, and this one stands by. Fenced (the lease not
// live with the margin, and the ledger not read this pass:
// Enforcer.fenced), the ledger is read first, once in the pass
// (leaseFence); when that read fails or another instance holds the
// broker, or when it counted another instance's purges, the unexpired
// deletions wait, and enforcer_blocked{reason="lease_fenced"} is 1.
func (e *Enforcer) recordPurgesAhead(ctx context.Context, now time.Time, dels []Deletion) []Deletion {
	purges := slices.ContainsFunc(dels, isPurge)
	// Not read this pass: read now whether another instance holds the
	// broker (a fresh agent that never renewed, or a lease run out while
	// nothing was claimed, is not fenced by that alone).
	// The ledger lost (deleted, reshaped): no read can show which
	// instance holds the broker, so only a lease this agent renewed
	// before, still live with its margin, lets it purge (a second
	// instance cannot take the broker over without reading the ledger;
	// found by the simulation, ledger_reshape with duplicate_agent,
	// seed 34: both instances purged while the topic was reshaped).
	lostFenced := purges && !e.dryRun && e.prot.ledgerLost && !e.leaseLive(now)
	fenced := purges && !e.dryRun && (lostFenced || !e.leaseFence(ctx, now) || e.prot.purgesHeld.Equal(now) || e.writtenSince(now))
	e.m.blocked.WithLabelValues(string(BlockLeaseFenced)).Set(gauge(fenced))
	waiting := purges && !e.dryRun && e.prot.historyWait
	e.m.blocked.WithLabelValues(string(BlockPurgeHistory)).Set(gauge(waiting))
	if e.dryRun || !purges {
		return dels
	}
	hold := func(msg string, attrs ...any) []Deletion {
		e.logger.Warn(msg, attrs...)
		return slices.DeleteFunc(slices.Clone(dels), isPurge)
	}
	if waiting {
		return hold("unexpired records not purged this pass: this process found no record of its own at its first ledger read and waits a lease and a pass for a peer to write back a record the ownership topic lost (its purge history)",
			"wait", (e.cfg.Protection.LeaseDuration + e.cfg.Interval).String())
	}
	if lostFenced {
		return hold("unexpired records not purged this pass: the ownership topic is lost and this agent's lease, renewed before, is not live with its margin (lease fencing)",
			"lease", e.cfg.Protection.LeaseDuration.String(), "margin", leaseMargin(e.cfg.Protection.LeaseDuration).String())
	}
	if fenced {
		return hold("unexpired records not purged this pass: this agent's lease is not live with its margin, and the ledger could not be read or another instance holds the broker (lease fencing)",
			"lease", e.cfg.Protection.LeaseDuration.String(), "margin", leaseMargin(e.cfg.Protection.LeaseDuration).String())
	}
	if e.prot.standby {
		return hold("unexpired records not purged this pass: another agent instance holds this broker's lease (lease fencing)")
	}
	if e.prot.records == nil || e.prot.ledgerLost && !e.prot.lostWritten {
		return dels
	}
	rec := e.clusterRecord()
	rec.Purged = e.purgeHistoryWith(now, dels)
	rec.Instance, rec.Updated, rec.Renewed = e.instance, now, now
	rec.LeaseMs = e.cfg.Protection.LeaseDuration.Milliseconds()
	if err := e.storeRecord(ctx, rec); err != nil {
		return hold("unexpired records not purged this pass: the purge could not be recorded first", "err", err)
	}
	recs, err := e.admin.LoadRecords(ctx)
	if err != nil {
		return hold("unexpired records not purged this pass: this agent's record could not be read back (lease fencing)", "err", err)
	}
	if r := recs.Agents[e.brokerID]; r.Instance != e.instance || !r.Renewed.Equal(rec.Renewed) {
		e.followInstance(recs, now)
		return hold("unexpired records not purged this pass: another agent instance wrote this broker's record (lease fencing)",
			"instance", e.instance, "record_instance", r.Instance)
	}
	if !e.leaseLive(e.clock.Now()) {
		return hold("unexpired records not purged this pass: the lease's renewal took longer than the lease minus its margin (lease fencing)",
			"lease", e.cfg.Protection.LeaseDuration.String(), "margin", leaseMargin(e.cfg.Protection.LeaseDuration).String())
	}
	return dels
}

// noteLostWrite notes a write of this agent's record, made while the
// ledger is lost, that may be in the topic: it succeeded, or failed but
// for the loss (its reply lost). recordPurgesAhead then records purges
// first.
func (e *Enforcer) noteLostWrite(err error) {
	e.prot.lostWritten = e.prot.lostWritten || e.prot.ledgerLost && !errors.Is(err, ErrLedgerLost)
}

// leaseMargin is how long before its lease would expire an agent stops
// purging unexpired data until it renews (a quarter of the lease): a
// second instance for the broker takes over once it has seen no renewal
// for a whole lease, on its own clock, so the two never purge at once,
// whatever the time a pass takes between renewal and deletion.
func leaseMargin(lease time.Duration) time.Duration { return lease / 4 }

// leaseLive reports whether this agent's lease, as last written (and read
// back), is live with the margin: renewed less than the lease minus
// leaseMargin ago on the monotonic clock.
func (e *Enforcer) leaseLive(now time.Time) bool {
	lease := e.cfg.Protection.LeaseDuration
	return e.prot.renewed && e.monotonic(now)-e.prot.renewedMono < lease-leaseMargin(lease)
}

// fenced reports whether this pass may not write its record or purge
// unexpired data before it reads the ledger (lease fencing, spec R8.8):
// with a ledger, its lease not live with the margin, and the ledger not
// read this pass (a read shows whether another instance holds the broker:
// without one, this agent cannot tell that no other took over, or wrote
// since). Observe mode too: an observe-mode instance writes its broker's
// record when it lifts what that record claims, and written from records
// not read this pass it would put back a claim the active instance had
// just dropped (found by the simulation, seed 2581 of the default mix).
// Without a ledger (never read, lost) no read can tell: recordPurgesAhead
// lets purges go on while the lease is live.
// A process whose record is Fresh (isFresh: within a lease of finding
// no record of its own) reads it whatever its lease: a peer may have
// written its earlier process's claims into the record since this
// process's last read, and written once (ledger_restore.go, adopt);
// written over from the records read before, they would be lost for
// good (found on a 3-broker cluster,
// TestR8_7PeerWritesBackAnEarlierFreshProcessesClaimsOnACluster).
func (e *Enforcer) fenced(now time.Time) bool {
	if e.prot.records == nil || e.prot.ledgerLost || e.prot.loaded.Equal(now) {
		return false
	}
	return !e.leaseLive(now) || e.isFresh()
}

// leaseFence reports whether this agent may write its record and purge
// unexpired data this pass (lease fencing, spec R8.8): it is not fenced,
// or the ledger, read once in the pass (readLeaseHolder), shows no other
// instance holding the broker. Every write of this agent's record goes
// through it (storeRecord), its first included: another instance may
// have taken the broker over since this agent last read the ledger (a
// pass switching protection on uses the records read before, R8.4, and
// a pass's read may fail), and its record, with its purges, would be
// written over unread, lost to the caps (found by the simulation,
// duplicate_agent, seed 718).
func (e *Enforcer) leaseFence(ctx context.Context, now time.Time) bool {
	if !e.fenced(now) {
		return true
	}
	if !e.prot.fenceRead.Equal(now) {
		e.prot.fenceRead, e.prot.fenceOK = now, e.readLeaseHolder(ctx, now)
	}
	return e.prot.fenceOK
}

// readLeaseHolder reads the ledger for leaseFence and reports whether
// this agent may write its record and purge: the read succeeded and no
// other instance holds this broker's lease (followInstance: then it
// stands by).
func (e *Enforcer) readLeaseHolder(ctx context.Context, now time.Time) bool {
	e.prot.fenceChanged, e.prot.fenceAdopt = false, nil
	recs, err := e.admin.LoadRecords(ctx)
	if err != nil {
		e.logger.Debug("lease fencing: ledger read failed", "err", err)
		return false
	}
	if e.prot.records != nil {
		cur, ok := recs.Agents[e.brokerID]
		old, had := e.prot.records.Agents[e.brokerID]
		e.prot.fenceChanged = ok != had || cur.Instance != old.Instance || !cur.Updated.Equal(old.Updated)
		if ok && e.isFresh() && !e.dryRun && cur.Claims() && !cur.Fresh && (!had || old.Fresh) && (cur.Instance == "" || cur.Instance == e.instance) {
			// A peer wrote claims into this process's record, or wrote
			// its earlier record back, since its last read (every record
			// this process writes is Fresh): the pass's writes keep
			// those claims, and the next pass reads the ledger and
			// adopts them (restoreOwn).
			e.prot.fenceChanged, e.prot.fenceAdopt, e.prot.loaded = true, &cur, time.Time{}
		}
	}
	e.followInstance(recs, now)
	if e.prot.standby {
		return false
	}
	// Taking over from another instance: its purges count (the caps are
	// the log dir's, spec R7.3), and the records this pass writes hold
	// them (storeRecord); this pass's deletions were planned without
	// them, so they wait for the next pass's plan.
	// A process waiting for its own record (restoreHistory) goes on
	// waiting: only another instance's record ends the wait here.
	// A record whose writer had not established its purge history
	// (PurgesUnknown) is counted by restoreHistory at the next read,
	// which waits for the history; this pass's deletions wait for it.
	if r := recs.Agents[e.brokerID]; !e.dryRun && (!e.prot.historyWait || r.Instance != "" && r.Instance != e.instance) {
		if r.PurgesUnknown {
			if !e.prot.purgesRestored {
				e.prot.purgesHeld = now
			}
		} else if e.restorePurges(r, now) {
			e.prot.purgesHeld = now
		}
	}
	return true
}

// writtenSince reports whether this pass's lease fencing read found this
// broker's record written since the records the pass planned with
// (another instance, or this one's earlier process, wrote it). A plan
// that protects nothing more is then not applied, and the unexpired
// deletions wait: the next pass plans from what is there. Written from
// the records read before, the plan would put back a claim the writer
// had just dropped (found by the simulation, seed 2581 of the default
// mix: an observe-mode duplicate put back a local-retention claim the
// active instance had dropped after an operator's change; another agent
// lowered the operator's new value to the same number, and the operator's
// lift restored the older original over the newer value). Switching
// protection on never waits for it (spec R8.4).
func (e *Enforcer) writtenSince(now time.Time) bool {
	return e.prot.fenceRead.Equal(now) && e.prot.fenceChanged
}

// isPurge reports whether a deletion deletes unexpired bytes.
func isPurge(d Deletion) bool { return d.UnexpiredBytes > 0 }

// spendCapsUnknownHistory counts the purge caps as spent (spec R7.3,
// R8.7: no evidence, no action) when this process, at its first read of
// the ledger, cannot establish its purge history: the ownership topic is
// lost (deleted after the agent's first start, reshaped, not compacted)
// or this agent's own record does not decode. Its earlier process may
// have purged up to the caps just before it restarted, and the record
// that held those purges is gone or unreadable: purging again at once
// could take twice the caps. Each log dir is counted as having purged
// its larger cap (hour or day) now: purges of unexpired data wait for
// the day's window (24 hours, the longer window: a history up to a day
// old is unknown, and only the day window frees the daily cap safely);
// expired data is deleted as before. The counted purge goes into this
// agent's record at its next write like any other (purgeHistory), so a
// restart in the meantime does not forget it. A fresh install (the
// topic missing at the first start and created by the agent, or a
// healthy topic with no record of this broker) is not affected.
func (e *Enforcer) spendCapsUnknownHistory(o *Observed, why string) {
	if e.prot.purgesRestored || e.dryRun || o.Snapshot == nil {
		return
	}
	e.prot.purgesRestored = true
	c := e.cfg.Purge
	pct := max(c.MaxPercentPerHour, c.MaxPercentPerDay)
	if c.MaxPercentPerPass <= 0 || pct <= 0 {
		return
	}
	mono := e.ev.lastMono
	var dirs []string
	for i := range o.Snapshot.LogDirs {
		ld := &o.Snapshot.LogDirs[i]
		b := int64(math.Ceil(pct / 100 * float64(ld.Usage.CapacityBytes)))
		if b <= 0 {
			continue
		}
		e.ev.purges = append(e.ev.purges, purgeRecord{at: mono, dir: ld.Path, bytes: b})
		dirs = append(dirs, ld.Path)
	}
	if len(dirs) == 0 {
		return
	}
	o.Purged = e.purged(mono)
	e.logger.Warn("purge caps counted as spent for a day: this agent's purge history is unknown (no evidence, no action); unexpired data is not purged until the day's window frees, expired data is deleted as before",
		"reason", why, "log_dirs", dirs, "window", "24h")
}

// restoreHistory establishes this process's purge history (spec R7.3)
// from its record at its first read of the ledger (and, after standing
// by, at the read that lets it take over):
//
//   - its record as its earlier process (or the instance it takes over
//     from) wrote it: its purges are restored (restorePurges);
//   - its record written back by a peer (Record.Restored: the ownership
//     topic lost it while this agent was down): the copy's purges are
//     restored, and the caps count as spent (spendCapsUnknownHistory):
//     the copy is as the peer last read it, and purges its earlier
//     process recorded after that read are unknown (found by the
//     simulation, ledger_delete, seed 1271: the restored copy lacked the
//     last 24 MiB, and 16 MiB more were purged);
//   - no record of its own: a fresh install, or the topic deleted while
//     this agent was down and created again (by this agent's first read,
//     or a peer's) before any peer wrote its record back. The two cannot
//     be told apart at once: unexpired data is not purged for a lease
//     and a pass (enforcer_blocked{reason="purge_history"}), in which
//     every live peer that remembers the record writes it back
//     (restoreLost), marked Restored (the case above); the wait starts
//     again on a topic created again meanwhile (waitForHistory); then,
//     with still no record, this agent purges as a fresh install (found by the
//     simulation, ledger_delete, seed 530: the topic was deleted in the
//     step the agent restarted, and it purged a second hour's cap),
//     unless a record it read says the topic was lost within the day
//     (lostMark): then the caps count as spent (spendCapsUnknownHistory). A
//     record this process wrote meanwhile does not end the wait. A
//     cluster that lists no other broker has no agent that could write
//     the record back: no wait (peersListed).
//
// Expired data is deleted as before, and write protection takes over at
// its band either way.
func (e *Enforcer) restoreHistory(ctx context.Context, o *Observed, recs Records) {
	if e.prot.purgesRestored || e.brokerID < 0 {
		return // known, or this agent's broker not yet (no purge either)
	}
	r, ok := recs.Agents[e.brokerID]
	switch {
	case e.dryRun:
		e.restorePurges(r, o.Now)
	case ok && r.Restored:
		e.restorePurges(r, o.Now)
		e.prot.purgesRestored = false
		e.spendCapsUnknownHistory(o, "this agent's record was written back by a peer after the ownership topic lost it: purges recorded after the peer's copy are unknown")
		e.prot.purgesRestored = true
	case ok && (!r.PurgesUnknown || e.prot.historyKnown) && (!e.prot.historyWait || r.Instance != "" && r.Instance != e.instance):
		// The instance taken over from counts too. One that had not
		// established its history (PurgesUnknown) purged no unexpired
		// data: this process, which had established its own before it
		// stood by (historyKnown), holds it in memory.
		e.restorePurges(r, o.Now)
	case ok && r.PurgesUnknown && !e.prot.historyWait:
		// Written by a process that had not established its purge
		// history (waiting for it, killed before the wait's end; or in
		// observe mode): its purges count, and this process waits as
		// if it had found no record (found by the simulation, seeds
		// 4296 and 5728 of the default mix: the record of a process
		// killed in its wait, and an observe-mode instance's, ended the
		// next process's wait with no history, and it purged a second
		// hour's cap).
		e.restorePurges(r, o.Now)
		e.prot.purgesRestored = false
		o.Purged = e.purged(e.ev.lastMono)
		e.logger.Info("this agent's record was written by a process that had not established its purge history: its purges count, and this process waits for its history as if it had found no record",
			"topic", e.cfg.OwnershipTopic, "instance", r.Instance)
		fallthrough
	default:
		// No record of its own, or only one this process wrote while
		// waiting.
		mono := e.monotonic(o.Now)
		if !e.prot.historyWait {
			if recs.Undecodable[e.brokerID] > 0 {
				return // spendCapsUnknownHistory counted the caps
			}
			if !e.peersListed(ctx) {
				// No other broker: no agent that could write the record
				// back (a second instance for this broker, standing by,
				// writes nothing).
				e.prot.purgesRestored = true
				break
			}
		}
		e.waitForHistory(recs.Topic, mono)
		if mono < e.prot.historyUntil {
			return
		}
		e.prot.historyWait = false
		if lost := e.lostMark(o.Now); !lost.IsZero() {
			// The topic was lost within the day: this agent's record
			// may have gone with it, and every process that remembered
			// it too (found by the simulation, seed 2555 of the default
			// mix).
			e.spendCapsUnknownHistory(o, "no record of this agent was written back, and the ownership topic was lost within the day: its record may have gone with the topic and every process that remembered it")
			e.prot.purgesRestored = true
			break
		}
		e.prot.purgesRestored, e.prot.freshInstall = true, true
		e.logger.Info("no record of this agent was written back: purging as a fresh install", "topic", e.cfg.OwnershipTopic)
	}
	o.Purged = e.purged(e.ev.lastMono)
}

// waitForHistory starts restoreHistory's wait for this agent's record, or
// starts it again on an ownership topic created since it began (by this
// agent, a peer, a duplicate or an operator): no peer has had a lease and
// a pass to write the record back into that one (found by the simulation,
// seed 59828 of the default mix: the topic was deleted and created again
// within the wait, between two of this agent's reads, and the wait ended
// on the new, empty topic before any peer had read it; a second hour's cap
// was purged). A wait begun on a read that did not know the topic (this
// agent's first read created it) starts again, silently, on the first
// read that does; a source that never knows it (Records.Topic empty)
// never restarts it.
func (e *Enforcer) waitForHistory(topic string, mono time.Duration) {
	wait := e.cfg.Protection.LeaseDuration + e.cfg.Interval
	switch {
	case !e.prot.historyWait:
		e.logger.Warn("no record of this agent in the ownership topic: unexpired data is not purged for a lease and a pass, while peers write back a record the topic may have lost (a fresh install waits too); expired data is deleted as before",
			"topic", e.cfg.OwnershipTopic, "wait", wait.String(), "reason", BlockPurgeHistory)
	case topic == e.prot.historyTopic:
		return
	case e.prot.historyTopic != "":
		e.logger.Warn("the ownership topic was created again while this agent waited for its record: the wait starts again on it",
			"topic", e.cfg.OwnershipTopic, "wait", wait.String(), "reason", BlockPurgeHistory)
	}
	e.prot.historyWait, e.prot.historyUntil, e.prot.historyTopic = true, mono+wait, topic
}

// historyUnknown reports whether this process has not established its
// purge history (restoreHistory): the records it writes say so
// (Record.PurgesUnknown). An observe-mode process never waits for it.
func (e *Enforcer) historyUnknown() bool {
	return e.dryRun || e.prot.historyWait || !e.prot.purgesRestored
}

// historyFrom: the records restoreHistory reads. The topic lost this
// broker's record, and this process remembers one another instance of
// it wrote (it stood by beside it, and takes over now): that record
// counts as one a peer wrote back (Record.Restored: its purges are
// restored, and the caps count as spent). Read as no record at all, it
// made the instance taking over purge as a fresh install, a second
// hour's cap (found by the simulation, ledger_delete seed 1208: the
// topic deleted just before a standby's takeover).
func (e *Enforcer) historyFrom(recs Records) Records {
	if _, ok := recs.Agents[e.brokerID]; ok || recs.Undecodable[e.brokerID] > 0 || e.prot.purgesRestored {
		return recs
	}
	mem := e.prot.remembered
	if mem == nil {
		mem = e.prot.records
	}
	r, ok := agentOf(mem, e.brokerID)
	if !ok || !otherInstance(r, e.instance) {
		return recs
	}
	recs = recs.Clone()
	r.Restored = true
	recs.Agents[e.brokerID] = r
	return recs
}

// peersListed reports whether the cluster lists a broker other than this
// agent's (whose agent may remember this agent's record); a failed read
// counts as yes (the safe side: the wait).
func (e *Enforcer) peersListed(ctx context.Context) bool {
	live, err := e.admin.LiveBrokers(ctx)
	if err != nil {
		return true
	}
	return slices.ContainsFunc(live, func(id int32) bool { return id != e.brokerID })
}

// lostMark is the last time this process found the ownership topic lost,
// or read a record saying so (Record.LedgerLost), while it is less than
// a day old at now (the purge caps' longer window); zero otherwise.
// Every record this process writes carries it, so a process that finds
// no record of its own learns the loss from its peers' (restoreHistory).
func (e *Enforcer) lostMark(now time.Time) time.Time {
	if e.prot.lostSeen.IsZero() || now.Sub(e.prot.lostSeen) >= 24*time.Hour {
		return time.Time{}
	}
	return e.prot.lostSeen.UTC()
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

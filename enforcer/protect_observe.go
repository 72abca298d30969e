package enforcer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// ErrNoAuthorizer is what the admin API answers when the brokers run
// without an authorizer (DescribeAcls or CreateAcls answered
// SECURITY_DISABLED): ACL protection cannot work there. Match it with
// errors.Is.
var ErrNoAuthorizer = errors.New("no authorizer on the brokers: protection.strategy acl needs one (authorizer.class.name), or use protection.strategy quota")

// allowEveryoneRefresh: how often the brokers' allow.everyone.if.no.acl.found
// is read again (auto mode).
const allowEveryoneRefresh = 5 * time.Minute

// protectionState is the enforcer's memory of protection between passes,
// owned by the single worker.
type protectionState struct {
	// records: the ownership topic as last read or written (nil until
	// read once); loaded: when.
	records *Records
	loaded  time.Time
	// virtual: observe mode's record, what enforcing would have set.
	virtual Record
	// unrecorded: bindings (and a quota) this agent set whose claim no
	// written record holds yet; dirty: the last record write failed.
	unrecorded      map[ACL]bool
	unrecordedQuota int64
	dirty           bool
	// leases: for each other agent, its record's renewal as last seen and
	// when this agent first saw it; gone: when a broker was first seen
	// missing from the cluster's metadata. Both on this agent's monotonic
	// clock (monotonic): a jump of its wall clock neither expires a live
	// lease nor holds an expired one.
	leases map[int32]leaseSeen
	gone   map[int32]time.Duration
	// monoOrigin: the wall reading monotonic counts from, for a Clock
	// that is no MonotonicClock.
	monoOrigin time.Time
	live       map[int32]bool // the cluster's brokers, nil when unknown
	// allowEveryone as last read (auto mode), and when.
	allowEveryone     AllowEveryone
	allowEveryoneRead time.Time
	// errs: the problems of the last pass with protection observed.
	errs map[ProtectionError]bool
	// observeLift: observe mode has logged that it lifts what it set.
	observeLift bool
	// operatorTopics: tiered topics whose lowered local retention an
	// operator changed in this lowering episode: not lowered again until
	// the episode ends (in memory: a restart forgets it).
	operatorTopics map[string]bool
	// operatorDropped: the claims (topic, key, value) dropped for it.
	operatorDropped map[[3]string]bool
	// refused: lowerings Kafka refused in this episode (localret_refused.go).
	refused map[string]refusedLowering
	// sizedAt: the Updated of the record whose size the gauge shows.
	sizedAt time.Time
	// missingSince: since when wanted protection has been missing from
	// what is read back (zero: all in place).
	missingSince time.Time
	// self: the renewal of this broker's record by another instance, as
	// last seen and since when; standby: that instance's lease is live,
	// this agent stands by (spec R8.8).
	self    leaseSeen
	standby bool
	// untrusted: this pass's inputs are not trusted (trusted: at the
	// pass's start, its snapshot is stale: its clock jumped ahead, or the
	// scans stopped): it protects nothing anew and renews no lease (R8.1),
	// so it takes no other instance's record over (followInstance);
	// untrustedHold: it stands by for that reason.
	untrusted, untrustedHold bool
	// overwritten: the Updated of this agent's last written record
	// whose claims another instance wrote over (protect_overwritten.go);
	// keptConfigs: the config claims of that record kept, merged back
	// into this broker's record as read (keptMerged) until a record
	// planned with them is written.
	overwritten time.Time
	keptConfigs []ConfigClaim
	keptMerged  bool
	// selfGone: since when this agent's broker has been missing from the
	// cluster's metadata (monotonic; negative: listed).
	selfGone time.Duration
	// purgesRestored: the purge history of this agent's record was read
	// back into the caps' windows (once, at the first read).
	purgesRestored bool
	// historyWait: this process's first read found no record of its
	// own; until historyUntil (monotonic) it purges no unexpired data,
	// waiting for a peer to write back a record the topic lost
	// (restoreHistory).
	historyWait  bool
	historyUntil time.Duration
	// historyTopic: the ownership topic (Records.Topic) the wait is
	// counted on; another one read restarts the wait.
	historyTopic string
	// historyKnown: this process established its purge history before
	// it stood by (it is in memory): a record of an instance that had
	// not established its own (Record.PurgesUnknown), taken over from,
	// holds no purge it lacks (that instance purged no unexpired data).
	historyKnown bool
	// freshInstall: the wait ended with no record of its own (purging
	// as a fresh install); historyLate: a peer then wrote back claims
	// of an earlier process of this agent (inheritOwn): the caps count
	// as spent at the next read (readRecords).
	freshInstall, historyLate bool
	// ledgerLost: the last read found the ownership topic lost; written:
	// this agent's record as last written (restored from memory when the
	// topic lost it).
	ledgerLost bool
	// lostSeen: the last time (wall clock) this process found the
	// ownership topic lost, or read a record saying so (LedgerLost);
	// written into its record for a day (lostMark).
	lostSeen time.Time
	// lostWritten: a write of this agent's record succeeded while the
	// ledger is lost (the topic created again takes writes), or failed
	// but for the loss (its reply lost, it may have): until a read finds
	// the ledger back, purges are recorded first as with a ledger
	// (recordPurgesAhead).
	lostWritten bool
	written     *Record
	// writtenGone: bindings of written that a read of the topic ACLs
	// made since it was written found absent: whoever deleted them, an
	// identical binding in place later is not this agent's
	// (keepOverwritten). This agent creates a binding only after writing
	// the record that claims it (which clears this), or, that write
	// failed, as set unrecorded.
	writtenGone map[ACL]bool
	// writtenQuotaGone: a read of the default producer quota made since
	// written was written found another value in place than the quota
	// it claims or releases (as writtenGone; keepOverwritten).
	writtenQuotaGone bool
	// unconfirmed: the Updated of this agent's record writes that failed
	// since its last successful one (each may have taken effect).
	unconfirmed []time.Time
	// seq: the writes of this agent's record this process made
	// (Record.Seq).
	seq uint64
	// switchingSince: when each log dir the policy wants protected but
	// the cached records do not show protected was first seen so
	// (recordsDue).
	switchingSince map[string]time.Time
	// readOnce: a read of the records succeeded in this process; fresh:
	// the first found no record of this agent's own; then, for a lease
	// from that read (freshUntil, monotonic), its records are written
	// Fresh and it adopts the claims of its earlier process's record when
	// a peer writes them back (ledger_restore.go).
	readOnce, fresh bool
	freshUntil      time.Duration
	// started: when this process started (the clock at New): every
	// record it writes says so (Record.Started).
	started time.Time
	// inherits: the earlier processes whose claims this one took over
	// (Record.Inherits; restoreOwn): every record it writes names them.
	inherits []time.Time
	// inheritSeq: the write of each of them taken over (Record.InheritsSeq);
	// takenOver: the claims of the records they were taken over from.
	inheritSeq ledger.Writes
	takenOver  ledger.Record
	// copyUntil: until when (monotonic) the config claims taken over
	// from a peer's copy are kept, not restored (localret_lost.go).
	copyUntil time.Duration
	// earlier: by broker, the records of its agent's earlier processes
	// whose claims no record of the broker read since names as
	// inherited: written into its record until one does (adopt).
	earlier map[int32][]Record
	// remembered: every record as the last successful read of the topic
	// returned it, with what restoreLost put back: the memory lost
	// records are written back from (a read whose pass then failed, its
	// brokers' list unread, still counts).
	remembered *Records
	// releaseFailures: releases failed in a row; releaseRetryAt: not
	// retried before (capped backoff, spec R8.5).
	releaseFailures int
	releaseRetryAt  time.Duration // monotonic
	// renewedMono: when (monotonic, at the call's start) this agent last
	// wrote its record with a lease (Renewed set) and the write succeeded;
	// renewed: it has. The lease fence (leaseLive) counts from it.
	renewedMono time.Duration
	renewed     bool
	// stamped: the last lease stamp (Renewed) this process wrote, and
	// when (monotonic): another instance's record that carries it was
	// not renewed by that instance (followInstance).
	stamped leaseSeen
	// pass: the current pass's time (Observed.Now). fenceRead: the pass
	// whose lease fencing read was made (at most one a pass, leaseFence);
	// fenceOK: it allowed this agent's record writes and purges;
	// fenceChanged: it found this broker's record written since the
	// records the pass planned with (writtenSince); purgesHeld: the pass
	// in which it counted another instance's purges (that pass's purges,
	// planned without them, wait).
	pass, fenceRead, purgesHeld time.Time
	fenceOK, fenceChanged       bool
	// fenceAdopt: this broker's record as that read found it written
	// back by a peer while this process's record is Fresh (claims of its
	// earlier process): every write of that pass keeps its claims
	// (storeRecord).
	fenceAdopt *Record
	// calmSeen: a pass saw this agent's log dirs calm (calm) since its
	// record was last written after planning protection: an operator's
	// lift acknowledged earlier is over (its episode ended), even if every
	// pass through the calm failed before planning protection.
	calmSeen bool
}

type leaseSeen struct {
	renewed time.Time     // the record's Renewed
	since   time.Duration // when this agent first saw that value (monotonic)
}

// monotonic is this agent's reading of a clock that never jumps: the
// time elapsed since a fixed instant (MonotonicClock), or, for a Clock
// without one, since the first reading (Go's monotonic reading of Now
// when the clock's times carry it). Leases are timed on it: how long a
// record has been seen unrenewed, never the wall clock's difference.
// isFresh: this process found no record of its own and is within a
// lease of that read, or has read nothing yet.
func (e *Enforcer) isFresh() bool {
	return !e.prot.readOnce || e.prot.fresh && e.monotonic(e.clock.Now()) < e.prot.freshUntil
}

func (e *Enforcer) monotonic(now time.Time) time.Duration {
	if mc, ok := e.clock.(MonotonicClock); ok {
		return mc.Elapsed()
	}
	if e.prot.monoOrigin.IsZero() {
		e.prot.monoOrigin = now
	}
	return now.Sub(e.prot.monoOrigin)
}

// recordForMode is this agent's record in its mode: enforcing, the
// cluster's (clusterRecord); in observe mode, the virtual one (what
// enforcing would have set).
func (e *Enforcer) recordForMode() Record {
	if e.dryRun {
		return e.prot.virtual
	}
	return e.clusterRecord()
}

// clusterRecord is this agent's record on the cluster, as last read or
// written; without one, an empty record of this agent's broker (never
// broker 0's: a record built on it is written under its BrokerID).
func (e *Enforcer) clusterRecord() Record {
	if e.prot.records == nil {
		return Record{BrokerID: e.brokerID}
	}
	r, ok := e.prot.records.Agents[e.brokerID]
	if !ok {
		return Record{BrokerID: e.brokerID}
	}
	return r
}

// recordsDue reports whether the records must be read before anything
// else: never read yet, lost at the last read, or an interval old (or the clock went back),
// unless a log dir is just switching protection on (that must not wait
// for a read: it uses the cached records).
func (e *Enforcer) recordsDue(o Observed) bool {
	if e.prot.records == nil || e.prot.ledgerLost {
		// Lost at the last read: nothing is claimed on the cached
		// records, a log dir switching on included (R8.7 over R8.4).
		return true
	}
	due := o.Now.Sub(e.prot.loaded) >= e.cfg.Interval || o.Now.Before(e.prot.loaded)
	if e.prot.standby {
		return due // following the active instance's lease
	}
	if len(e.prot.unconfirmed) > 0 {
		// A record write of this process failed and may have taken
		// effect (its reply lost): the cached records may not show the
		// protection it switched on. Were a pass that still finds a log
		// dir unprotected in them taken for one switching on, no pass
		// would read the ledger again, and lease fencing, finding the
		// record written since, would hold every plan: no renewal, no
		// purge (found on a 3-broker cluster: a first record write slower
		// than the record timeout).
		return due
	}
	// Switching on: the cached records, for one interval from the pass
	// that first found the log dir so. After that the ledger is read
	// again when due: a switch-on that wrote no record (every binding it
	// wanted already in place, its earlier process's the cached records
	// do not attribute) would otherwise never read a peer's write-back
	// of that process's record, its claims and its purge history (R7.3,
	// R8.7).
	switching := false
	for d := range o.wantProtected {
		if o.Protected[d] {
			continue
		}
		since, ok := e.prot.switchingSince[d]
		if !ok || o.Now.Before(since) {
			if e.prot.switchingSince == nil {
				e.prot.switchingSince = map[string]time.Time{}
			}
			since = o.Now
			e.prot.switchingSince[d] = since
		}
		if o.Now.Sub(since) < e.cfg.Interval {
			switching = true
		}
	}
	for d := range e.prot.switchingSince {
		if !o.wantProtected[d] || o.Protected[d] {
			delete(e.prot.switchingSince, d)
		}
	}
	if switching {
		return false
	}
	return due
}

// protectionRelevant: protection must be observed this pass: this agent
// claims or wants something, set something unrecorded, or another agent's
// record claims something (the cluster-wide view, expired leases).
func (e *Enforcer) protectionRelevant(o Observed) bool {
	if !e.dryRun && !ledger.SamePurges(e.clusterRecord().Purged, e.purgeHistory(o.Now)) {
		return true // the purge history goes into the record
	}
	if !e.dryRun && e.prot.records != nil && !e.prot.ledgerLost && !e.clusterRecord().LedgerLost.Equal(e.lostMark(o.Now)) {
		return true // so does the ledger's loss (purge_record.go)
	}
	if !e.recordForMode().Empty() || !e.clusterRecord().Empty() || len(e.prot.unrecorded) > 0 || e.prot.unrecordedQuota > 0 || len(o.wantProtected) > 0 ||
		len(o.lowerCandidates) > 0 || e.cordonRelevant(o) {
		return true
	}
	if e.prot.records != nil {
		for _, r := range e.prot.records.Agents {
			if r.Claims() {
				return true
			}
		}
	}
	return false
}

// readRecords reads every agent's record and lift, and the cluster's
// brokers, and follows the other agents' leases.
func (e *Enforcer) readRecords(ctx context.Context, o *Observed) error {
	recs, err := e.loadRecords(ctx)
	if err != nil {
		if errors.Is(err, ErrLedgerLost) {
			e.spendCapsUnknownHistory(o, "the ownership topic is lost at this process's first read")
		}
		return err
	}
	e.reportUndecodable(recs)
	if _, ok := recs.Agents[e.brokerID]; !ok && recs.Undecodable[e.brokerID] > 0 && !e.prot.standby {
		e.spendCapsUnknownHistory(o, "this agent's own record does not decode")
	}
	e.followInstance(recs, o.Now)
	e.keepOverwritten(recs)
	if !e.prot.standby {
		e.restoreHistory(ctx, o, e.historyFrom(recs))
	}
	// Records the topic lost (deleted, created again) are written back
	// from memory, never read as "no claims" (ledger_restore.go).
	recs = e.restoreLost(ctx, recs)
	// Then the kept claims go into this agent's record as read: merged
	// before, they went into what restoreLost writes back for other
	// processes, and took the key of a claim it wrote back (seed 2488).
	recs = e.mergeKept(recs)
	if e.prot.historyLate {
		// Not a fresh install after all: an earlier process of this
		// agent claimed, and may have purged, while the ledger was lost
		// (found by the simulation, ledger_delete seed 930: its purges
		// were in no record, and this process purged a second hour's
		// cap as a fresh install).
		e.prot.historyLate, e.prot.purgesRestored = false, false
		e.spendCapsUnknownHistory(o, "a peer wrote back claims of this agent's earlier process after it began purging as a fresh install: that process's purges are unknown")
		e.prot.purgesRestored = true
	}
	live, err := e.admin.LiveBrokers(ctx)
	if err != nil {
		return fmt.Errorf("list brokers: %w", err)
	}
	recs = recs.Clone()
	e.prot.records = &recs
	e.prot.loaded = o.Now
	e.prot.live = nil // nil: unknown (no cluster)
	if live != nil {
		e.prot.live = map[int32]bool{}
		for _, id := range live {
			e.prot.live[id] = true
		}
	}
	e.followLeases(recs, o.Now)
	return nil
}

// loadRecords reads the ownership records: a missing topic is created at
// the agent's first read, a lost ledger is reported and created again.
func (e *Enforcer) loadRecords(ctx context.Context) (ledger.Records, error) {
	recs, err := e.admin.LoadRecords(ctx)
	if errors.Is(err, ErrLedgerMissing) && e.prot.records == nil && e.prot.written == nil {
		// The agent's first read (its start, as Run's Prepare): the topic
		// is created, and empty; this agent knows no claim to keep or
		// release. Observe mode creates nothing: nothing is claimed or
		// lifted on it either way.
		if p, ok := e.admin.(Preparer); ok && !e.dryRun {
			if perr := p.Prepare(ctx); perr == nil {
				e.logger.Info("ownership topic created at start", "topic", e.cfg.OwnershipTopic)
				recs, err = ledger.NewRecords(), nil
			}
		} else if e.dryRun {
			recs, err = ledger.NewRecords(), nil
		}
	}
	if errors.Is(err, ErrLedgerLost) {
		e.m.prot.ledgerLost.Set(1)
		if !e.prot.ledgerLost {
			e.logger.Error("protection ledger lost: nothing is claimed or released until it is back; the guard creates a missing ownership topic again",
				"topic", e.cfg.OwnershipTopic, "err", err)
		}
		e.prot.ledgerLost = true
		if !errors.Is(err, ErrLedgerMissing) || e.prot.records != nil || e.prot.written != nil {
			// Not a fresh install's first read whose topic creation
			// failed: records may have gone with the topic.
			e.prot.lostSeen = latest(e.prot.lostSeen, e.clock.Now())
		}
		// A missing topic is created again (a reshaped or uncompacted
		// one is the operator's to fix): the records this agent holds
		// in memory are written to it by the next passes.
		if p, ok := e.admin.(Preparer); ok && !e.dryRun {
			if perr := p.Prepare(ctx); perr != nil {
				err = errors.Join(err, fmt.Errorf("create the ownership topic again: %w", perr))
			}
		}
	}
	if err != nil {
		return recs, fmt.Errorf("load protection records: %w", err)
	}
	for _, r := range recs.Agents {
		e.prot.lostSeen = latest(e.prot.lostSeen, r.LedgerLost)
	}
	if e.prot.ledgerLost {
		e.logger.Warn("protection ledger back", "topic", e.cfg.OwnershipTopic)
		e.prot.ledgerLost, e.prot.lostWritten = false, false
		e.leasesFromNow()
	}
	e.m.prot.ledgerLost.Set(0)
	return recs, nil
}

// leasesFromNow: the ledger is back after this agent found it lost. No
// lease could be renewed meanwhile, so none counts as lapsed for it: each
// peer's lease this agent follows counts again from this read. Their
// agents, alive, renew them within the lease; a dead agent's protection is
// lifted a lease after the ledger came back (found by the simulation,
// ledger_reshape: a peer lifted live agents' bindings and cordons the
// moment the repaired topic came back). An instance standing by for its
// broker (R8.8) still takes over as before: standing by, it writes back
// no peer's record, and it may be the last process that remembers one
// (ledger_reshape seed 81: a restarted peer's cordon left).
func (e *Enforcer) leasesFromNow() {
	mono := e.monotonic(e.clock.Now())
	for id, s := range e.prot.leases {
		s.since = mono
		e.prot.leases[id] = s
	}
}

// reportUndecodable counts and logs the ownership records that did not
// decode.
func (e *Enforcer) reportUndecodable(recs ledger.Records) {
	skipped := 0
	for _, n := range recs.Undecodable {
		skipped += n
	}
	e.m.prot.undecodable.Set(float64(skipped))
	if len(recs.Undecodable) > 0 {
		e.logger.Warn("ownership records that do not decode were skipped: those brokers' claims are left alone until a decodable record replaces them",
			"brokers", slices.Sorted(maps.Keys(recs.Undecodable)), "values", skipped)
	}
}

// followLeases follows the other agents' leases and notes since when a
// broker is missing from the cluster.
func (e *Enforcer) followLeases(recs ledger.Records, now time.Time) {
	mono := e.monotonic(now)
	for id, r := range recs.Agents {
		if id == e.brokerID {
			continue
		}
		if s, ok := e.prot.leases[id]; !ok || !s.renewed.Equal(r.Renewed) || mono < s.since {
			e.prot.leases[id] = leaseSeen{renewed: r.Renewed, since: mono}
		}
		if e.prot.live == nil || e.prot.live[id] {
			delete(e.prot.gone, id)
		} else if _, ok := e.prot.gone[id]; !ok {
			e.prot.gone[id] = mono
		}
	}
	for id := range e.prot.leases {
		if _, ok := recs.Agents[id]; !ok {
			delete(e.prot.leases, id)
			delete(e.prot.gone, id)
		}
	}
}

// followInstance decides whether this agent stands by (spec R8.8): its
// broker's record was written by another instance whose lease this agent
// saw renewed within the lease, on its own clock. Once no renewal is seen
// for a lease, it takes over (its next record names it). In observe mode
// a record with claims that this process did not write is followed the
// same way whatever instance it names: two agents for one broker may
// share a host name (two sidecars in one pod, host networking), and an
// observe-mode agent lifts its broker's claims (what it set earlier) only
// once no process renews them.
func (e *Enforcer) followInstance(recs Records, now time.Time) {
	r, ok := recs.Agents[e.brokerID]
	was := e.prot.standby
	other := r.Instance != "" && r.Instance != e.instance
	// A record naming this instance and this process's start, written
	// when a write of this process whose reply was lost was (unconfirmed),
	// is that write (seed 12392: the observe-mode instance stood by for
	// it, took its broker over again once the ledger was lost, and its
	// claim being given up left the ledger with the value still lowered).
	own := r.Instance == e.instance && r.Started.Equal(e.prot.started) && slices.ContainsFunc(e.prot.unconfirmed, r.Updated.Equal)
	if e.dryRun && r.Claims() && !own && (e.prot.written == nil || !e.prot.written.Renewed.Equal(r.Renewed)) {
		other = true
	}
	switch {
	case !ok && was && !e.prot.self.renewed.IsZero():
		// Standing by, the active instance's record vanished: the topic
		// was deleted and created again (ledger lost, spec R8.7), not a
		// lease run out. Its last renewal seen counts for a lease, in
		// which its process writes its record back from memory (found
		// by the simulation, ledger_delete with duplicate_agent, seeds
		// 261 and 1097: the standby took over at once, with no purge
		// history, while the other instance ran and had purged).
		e.prot.standby = e.monotonic(now)-e.prot.self.since < e.cfg.Protection.LeaseDuration
	case !ok || !other || r.Renewed.IsZero() || (!e.dryRun && !r.Claims() && r.PurgesUnknown) || tookOverWrite(e.prot.written, r, e.instance):
		// A write of the other instance this process took over since
		// (a peer's copy of it written back after the topic was lost)
		// is no renewal of that instance's lease. A record that claims
		// nothing and under which nothing is purged (PurgesUnknown)
		// fences nothing: an enforcing process does not stand by for
		// its stamp, which a new process cannot age (found by the
		// simulation, seed 53479 of the default mix: agent-1 restarted
		// beside the observe-mode agent-1b, which held broker 1's record
		// with its stamp of minutes before, and stood by a lease with
		// its log dir at 99%, nothing protecting it).
		e.prot.standby, e.prot.self = false, leaseSeen{}
	default:
		mono := e.monotonic(now)
		if s := e.prot.self; !s.renewed.Equal(r.Renewed) || mono < s.since {
			e.prot.self = leaseSeen{renewed: r.Renewed, since: mono}
			if st := e.prot.stamped; st.renewed.Equal(r.Renewed) && st.since <= mono && r.PurgesUnknown {
				// The other instance wrote this process's own stamp
				// (taking over, it keeps the lease of the record it
				// writes over): no renewal of its own. The lease counts
				// from this process's write, on its clock (seed 6078:
				// an observe-mode duplicate took broker 1 over with the
				// active instance's stamp a lease old, and that
				// instance stood by a lease more with its log dir at
				// 99%, nothing protecting it). Only from an instance
				// that purges nothing (PurgesUnknown: observe mode, or
				// waiting for its history): one that may purge under
				// that record is stood by for as any other, and its
				// purges count at the takeover (seed 9389: agent-1 took
				// broker 1 back at once, agent-1b purged, the topic was
				// lost before agent-1 read that record, and agent-1
				// purged past the hour's cap on its own history).
				e.prot.self.since = st.since
			}
		}
		lease := r.Lease()
		if lease <= 0 {
			lease = e.cfg.Protection.LeaseDuration
		}
		e.prot.standby = mono-e.prot.self.since < lease
	}
	e.prot.standby = e.prot.standby || e.holdUntrusted(r, ok && other)
	if e.prot.standby {
		// Taking over later, this agent counts the purges the active
		// instance recorded (the caps are the log dir's, spec R7.3).
		e.prot.historyKnown = e.prot.historyKnown || e.prot.purgesRestored && !e.prot.historyWait && !e.dryRun
		e.prot.purgesRestored = false
	}
	e.m.prot.standby.Set(gauge(e.prot.standby))
	e.logStandby(was, r)
}

// logStandby says when this agent starts standing by for the other
// instance's lease (holdUntrusted says its own), and when it takes over.
func (e *Enforcer) logStandby(was bool, r Record) {
	switch {
	case e.prot.standby && !was && !e.prot.untrustedHold:
		e.logger.Warn("another agent instance acts for this broker: standing by (changing nothing) until its lease expires",
			"broker_id", e.brokerID, "instance", e.instance, "active_instance", r.Instance, "lease", r.Lease().String())
	case was && !e.prot.standby:
		e.logger.Warn("the other agent instance for this broker stopped renewing its lease: taking over",
			"broker_id", e.brokerID, "instance", e.instance, "previous_instance", r.Instance)
	}
}

// holdUntrusted: an instance that cannot trust its inputs takes no other
// instance's record over (other), lease run out or not: acting, it would
// protect nothing anew and renew no lease (R8.1), and the other instance,
// alive and healthy, would stand by a lease for it. It stays passive and
// says so; what the record claims is lifted by peers once its lease runs
// out, as a dead agent's (found by the simulation, seed 69603: agent-1b,
// its clock 2 hours ahead, took broker 1's record without claims over
// from agent-1, which renews no lease without claims, every lease, and
// agent-1 stood by with its log dir at 99%). A copy of this process's own
// record written back under the other's name is no takeover.
func (e *Enforcer) holdUntrusted(r Record, other bool) bool {
	hold := !e.prot.standby && other && e.prot.untrusted && !tookOverWrite(e.prot.written, r, e.instance)
	if hold && !e.prot.untrustedHold {
		e.logger.Warn("this agent instance cannot trust its inputs (its snapshot is stale): it does not take its broker's record over from the other instance, and stands by (changing nothing) until it can",
			"broker_id", e.brokerID, "instance", e.instance, "active_instance", r.Instance)
	}
	e.prot.untrustedHold = hold
	return hold
}

// expired lists the other agents whose protection is to be lifted: a
// lease seen unrenewed for its length on this agent's monotonic clock
// (immune to clock differences between hosts and to jumps of this
// host's wall clock), or a broker missing from the cluster's metadata
// that long.
func (e *Enforcer) expired(now time.Time) map[int32]string {
	out := map[int32]string{}
	if e.prot.records == nil {
		return out
	}
	mono := e.monotonic(now)
	for id, r := range e.prot.records.Agents {
		if id == e.brokerID || !r.Claims() || e.prot.records.Undecodable[id] > 0 {
			continue // an undecodable record's claims are untouchable (R8.7)
		}
		lease := r.Lease()
		if lease <= 0 {
			lease = e.cfg.Protection.LeaseDuration // a version 1 record has none
		}
		if s, ok := e.prot.leases[id]; ok && mono-s.since >= lease {
			out[id] = LiftLeaseExpired
		}
		if since, ok := e.prot.gone[id]; ok && mono-since >= lease {
			out[id] = LiftBrokerGone
		}
	}
	return out
}

// readProtection reads the cluster's protection state: every topic ACL
// and the default producer quota, as the strategy and the records need.
// A cluster without an authorizer is not a failed read: it is recorded
// (NoAuthorizer) and reported as its own error.
func (e *Enforcer) readProtection(ctx context.Context, o *Observed) error {
	cfg := e.cfg.Protection
	recs := ledger.NewRecords()
	if e.prot.records != nil {
		recs = e.prot.records.Clone()
	}
	po := &ProtectionObserved{
		BrokerID: e.brokerID, Instance: e.instance, Strategy: cfg.Strategy, Records: recs, Enforcing: !e.dryRun, Purged: e.purgeHistory(o.Now),
		Expired: e.expired(o.Now), RecordDirty: e.prot.dirty, CalmSeen: e.prot.calmSeen, UnrecordedQuota: e.prot.unrecordedQuota,
		ProducerByteRate: cfg.ProducerByteRate, Lease: cfg.LeaseDuration, OwnershipTopic: e.cfg.OwnershipTopic,
		ExemptTopics: cfg.ExemptTopics, ExemptPrincipals: cfg.ExemptPrincipals,
	}
	for a := range e.prot.unrecorded {
		po.Unrecorded = append(po.Unrecorded, a)
	}
	ledger.SortACLs(po.Unrecorded)
	needACLs, needQuota := cfg.Strategy == StrategyACL || len(po.Unrecorded) > 0, cfg.Strategy == StrategyQuota || po.UnrecordedQuota > 0
	for _, r := range append(valuesOf(recs.Agents), e.prot.virtual) {
		for _, c := range r.Owned {
			needACLs = needACLs || c.Kind == OwnedACL
			needQuota = needQuota || c.Kind == OwnedQuota
		}
	}
	if needACLs {
		acls, err := e.admin.TopicACLs(ctx)
		switch {
		case errors.Is(err, ErrNoAuthorizer):
			po.NoAuthorizer = true
		case err != nil:
			return fmt.Errorf("list acls: %w", err)
		default:
			po.ACLs, po.ACLsRead = acls, true
			e.noteACLsRead(acls)
		}
	}
	if needQuota {
		rate, err := e.admin.DefaultProducerQuota(ctx)
		if err != nil {
			return fmt.Errorf("describe client quotas: %w", err)
		}
		po.DefaultProducerByteRate, po.QuotaRead = rate, true
		e.noteQuotaRead(rate)
		po.UnrecordedQuota = e.prot.unrecordedQuota
	}
	if cfg.Strategy == StrategyACL {
		po.AllowEveryone = e.allowEveryone(ctx, o.Now)
	}
	// Reading the topic configs never stands between a full disk and
	// protection: without them, claims stay as they are this pass and
	// nothing is lowered.
	if err := e.readConfigs(ctx, o, po); err != nil {
		po.ConfigsRead, po.TopicConfigs = false, nil
		e.logError(fmt.Errorf("tiered topics' local retention left as it is this pass: %w", err))
	}
	e.readCordons(ctx, o, po)
	o.Protection = po
	if e.dryRun {
		o.WouldProtect = e.wouldProtect(po)
	}
	return nil
}

// readConfigs reads the local retention of the topics a record claims or
// a pass may lower (spec R7.4). When this agent may make a new claim, the
// records are read again after the configs: an agent writes its record
// before it sets a value, so a value in place that another agent set is
// found in its record, and its operator's value is kept (never taken for
// the operator's).
func (e *Enforcer) readConfigs(ctx context.Context, o *Observed, po *ProtectionObserved) error {
	po.LowerFrom = e.policy.lowerFrom()
	episode := false
	for i := range o.Snapshot.LogDirs {
		episode = episode || o.Snapshot.LogDirs[i].Usage.Ratio() >= po.LowerFrom
	}
	if !episode && !o.Stale {
		e.prot.operatorTopics, e.prot.operatorDropped = nil, nil
	}
	po.OperatorTopics, po.OperatorDropped = e.prot.operatorTopics, e.prot.operatorDropped
	po.CopyHeld = e.copyHeld()
	po.RefusedTopics = e.refusedTopics(o.Snapshot)
	cands := o.lowerCandidates
	topics := configTopics(po.Records, e.prot.virtual, cands)
	if len(topics) == 0 {
		po.ConfigsRead = true
		return nil
	}
	got, err := e.admin.TopicConfigOverrides(ctx, topics, LocalRetentionBytesKey)
	if err != nil {
		return fmt.Errorf("describe topic configs: %w", err)
	}
	po.TopicConfigs, po.ConfigsRead = got, true
	po.Replicas = e.readReplicas(ctx, cands)
	// The records are read again when this agent may make a new claim, or
	// when a value in place is not its own claim's: another agent may have
	// lowered it further since the records were read (it wrote its record
	// first), and a stale read would take that agent's value for an
	// operator's change (found by the simulation, class tiered_shared).
	reread := false
	mine := map[string]bool{}
	for _, c := range e.clusterRecord().Configs {
		mine[c.Topic] = mine[c.Topic] || !c.Releasing
		if cur, ok := got[c.Topic]; ok && !po.Records.GuardSet(c, cur) {
			reread = true
		}
	}
	for _, t := range cands {
		reread = reread || !mine[t]
	}
	if reread {
		if err := e.readRecords(ctx, o); err != nil {
			return err
		}
		po.Records, po.Expired = e.prot.records.Clone(), e.expired(o.Now)
	}
	e.forgetOperatorChanged(po.Records, got) // localret_lost.go
	return nil
}

// wouldProtect is observe mode's view: this agent's record is the virtual
// one (what enforcing would have set), its bindings and quota count as
// set, and it enforces; no peer is lifted in it.
func (e *Enforcer) wouldProtect(po *ProtectionObserved) *ProtectionObserved {
	v := *po
	v.Records = po.Records.Clone()
	v.Records.Agents[e.brokerID] = e.prot.virtual
	delete(v.Records.Lifts, e.brokerID)
	v.Enforcing, v.Expired, v.Unrecorded, v.UnrecordedQuota, v.RecordDirty = true, nil, nil, 0, false
	v.ACLs = slices.Clone(po.ACLs)
	// Held claims only: what observe mode would be releasing counts as
	// gone at once (it reports the lift once).
	e.prot.virtual.HeldBindings(nil, func(a ACL) { v.ACLs = append(v.ACLs, a) })
	if q := e.prot.virtual.Quota(); q > 0 && po.DefaultProducerByteRate == 0 {
		v.DefaultProducerByteRate = q
	}
	if co := po.Cordons; co != nil && co.Read {
		// Observe mode's cordons count as in place, its own state apart.
		vc := *co
		for _, c := range e.prot.virtual.CordonClaims() {
			if !slices.Contains(vc.State.Dynamic, c.Value) {
				vc.State.Dynamic = append(slices.Clone(vc.State.Dynamic), c.Value)
			}
		}
		vc.Seen, vc.Declined = nil, nil
		v.Cordons = &vc
	}
	if vc := e.prot.virtual.ConfigClaims(); len(vc) > 0 && po.ConfigsRead {
		v.TopicConfigs = maps.Clone(po.TopicConfigs)
		for _, c := range vc {
			v.TopicConfigs[c.Topic] = strPtr(c.Value)
		}
	}
	return &v
}

// allowEveryone is the brokers' allow.everyone.if.no.acl.found: as
// configured, or read (auto) every allowEveryoneRefresh. A failed read is
// unknown, which never adds an ALLOW.
func (e *Enforcer) allowEveryone(ctx context.Context, now time.Time) AllowEveryone {
	v, auto := e.cfg.Protection.AllowEveryone()
	if !auto {
		return v
	}
	if !e.prot.allowEveryoneRead.IsZero() && now.Sub(e.prot.allowEveryoneRead) < allowEveryoneRefresh && !now.Before(e.prot.allowEveryoneRead) {
		return e.prot.allowEveryone
	}
	got, err := e.admin.AllowEveryoneIfNoACLFound(ctx)
	if err != nil {
		e.logger.Warn("could not read allow.everyone.if.no.acl.found from the brokers: taken as unknown (no ALLOW is added)", "err", err)
		got = AllowEveryoneUnknown
	} else if got != e.prot.allowEveryone || e.prot.allowEveryoneRead.IsZero() {
		e.logger.Info("allow.everyone.if.no.acl.found read from the brokers", "value", got.String(),
			"note", "unknown: set but hidden by the brokers; set enforcer.protection.allowEveryoneIfNoAclFound to say")
	}
	e.prot.allowEveryone, e.prot.allowEveryoneRead = got, now
	return got
}

func valuesOf[K comparable, V any](m map[K]V) []V {
	out := make([]V, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// claimsMissing reports whether a binding (or the quota) this agent's
// record claims is not in place.
func (e *Enforcer) claimsMissing(po *ProtectionObserved) bool {
	me := e.clusterRecord()
	if !me.Claims() || !po.Enforcing {
		return false
	}
	if q := me.Quota(); q > 0 && po.QuotaRead && po.DefaultProducerByteRate != q {
		return true
	}
	if !po.ACLsRead {
		return false
	}
	present := make(map[ACL]bool, len(po.ACLs))
	for _, a := range po.ACLs {
		present[ledger.NormACL(a)] = true
	}
	missing := false
	me.HeldBindings(nil, func(a ACL) { missing = missing || !present[a] })
	return missing
}

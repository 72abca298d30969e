package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Log dir cordons (KIP-1066, spec R3.8): a log dir of the agent's own
// broker the guard appended to the broker's dynamic cordoned.log.dirs.
// The claim (OwnedCordon) names the log.dirs entry in Value; the broker
// is the record's. Recorded before the APPEND, leased and lifted like
// every other claim; released with SUBTRACT, so an operator's entries
// stay, and dropped only once the entry is read back gone (R8.5). A log
// dir already cordoned that no record claims is the operator's: never
// claimed, never removed (R8.6).

// OwnedCordon: a log dir the guard cordoned on its own broker (Key
// cordoned.log.dirs, Value the log.dirs entry).
const OwnedCordon = "log_dir_cordon"

// CordonedLogDirsKey is the broker config holding the cordoned log dirs.
const CordonedLogDirsKey = "cordoned.log.dirs"

// CordonMinMetadataVersion is the metadata.version feature level from
// which Kafka takes cordoned.log.dirs (4.3-IV0). Under it the controller
// refuses the config with INVALID_CONFIG.
const CordonMinMetadataVersion = 30

// ErrCordonUnsupported: the cluster's metadata.version is under
// CordonMinMetadataVersion (or unknown), so no log dir can be cordoned.
var ErrCordonUnsupported = errors.New("cordoned.log.dirs needs metadata.version 4.3-IV0 (feature level 30) or later")

// BrokerCordons is one broker's cordon state.
type BrokerCordons struct {
	// MetadataVersion is the cluster's finalized metadata.version feature
	// level (0: unknown, as with a broker older than Kafka 3.3).
	MetadataVersion int16
	// LogDirs are the broker's log.dirs (or log.dir) entries as
	// configured: cordoned.log.dirs takes only these strings.
	LogDirs []string
	// Dynamic are the entries of the broker's own dynamic
	// cordoned.log.dirs (what APPEND and SUBTRACT change).
	Dynamic []string
	// Inherited are the entries of a cordoned.log.dirs set elsewhere
	// (server.properties or the cluster-wide dynamic default); a dynamic
	// per-broker value overrides them.
	Inherited []string
}

// Supported tells whether the cluster's metadata.version takes
// cordoned.log.dirs.
func (b BrokerCordons) Supported() bool { return b.MetadataVersion >= CordonMinMetadataVersion }

// Cordoned tells whether dir (a log.dirs entry) is cordoned in effect:
// listed, or "*" (every log dir), in the value the broker applies.
func (b BrokerCordons) Cordoned(dir string) bool {
	eff := b.Dynamic
	if len(eff) == 0 {
		eff = b.Inherited
	}
	return slices.Contains(eff, dir) || slices.Contains(eff, "*")
}

// Uncordoned lists the broker's log dirs that are not cordoned in effect.
func (b BrokerCordons) Uncordoned() []string {
	var out []string
	for _, d := range b.LogDirs {
		if !b.Cordoned(d) {
			out = append(out, d)
		}
	}
	return out
}

// CordonClaim is the claim on log dir dir (a log.dirs entry).
func CordonClaim(dir string) Owned {
	return Owned{Kind: OwnedCordon, Key: CordonedLogDirsKey, Value: dir}
}

// CordonClaims lists the cordons the record holds (not releasing).
func (r Record) CordonClaims() []Owned {
	var out []Owned
	for _, o := range r.Owned {
		if o.Kind == OwnedCordon && !o.Releasing {
			out = append(out, o)
		}
	}
	return out
}

// AllCordonClaims lists every cordon claim of the record, releasing ones
// included.
func (r Record) AllCordonClaims() []Owned {
	var out []Owned
	for _, o := range r.Owned {
		if o.Kind == OwnedCordon {
			out = append(out, o)
		}
	}
	return out
}

// CordonAdmin is what cordons need of the admin API: a broker's cordon
// state, and APPEND / SUBTRACT of one entry of its dynamic
// cordoned.log.dirs.
type CordonAdmin interface {
	LogDirCordons(ctx context.Context, node int32) (BrokerCordons, error)
	CordonLogDir(ctx context.Context, node int32, dir string) error
	UncordonLogDir(ctx context.Context, node int32, dir string) error
}

// ReleaseCordons uncordons (SUBTRACT) the claimed log dirs of broker
// that are still in its dynamic cordoned.log.dirs, and returns those it
// removed. Only the claimed entries are subtracted: the operator's stay.
// A claim is the agent's own broker's, so no other record holds it.
func ReleaseCordons(ctx context.Context, a CordonAdmin, broker int32, claims []Owned) ([]string, error) {
	if len(claims) == 0 {
		return nil, nil
	}
	st, err := a.LogDirCordons(ctx, broker)
	if err != nil {
		return nil, fmt.Errorf("read cordoned.log.dirs of broker %d: %w", broker, err)
	}
	var out []string
	var errs []error
	for _, c := range claims {
		if c.Kind != OwnedCordon || !slices.Contains(st.Dynamic, c.Value) || slices.Contains(out, c.Value) {
			continue
		}
		if err := a.UncordonLogDir(ctx, broker, c.Value); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c.Value)
	}
	return out, errors.Join(errs...)
}

// cordonsInPlace lists the claimed log dirs of broker still in its
// dynamic cordoned.log.dirs (read back).
func cordonsInPlace(ctx context.Context, a CordonAdmin, broker int32, claims []Owned) ([]string, error) {
	st, err := a.LogDirCordons(ctx, broker)
	if err != nil {
		return nil, fmt.Errorf("read cordoned.log.dirs of broker %d back: %w", broker, err)
	}
	var out []string
	for _, c := range claims {
		if slices.Contains(st.Dynamic, c.Value) {
			out = append(out, c.Value)
		}
	}
	return out, nil
}

// The read-back of an uncordon waits up to readBackTries x readBackPause
// for the broker to apply the change.
const (
	readBackTries = 30
	readBackPause = 100 * time.Millisecond
)

// liftCordons releases the cordon claims of a lift (by broker) and reads
// back what is still in place. An admin without the cordon calls cannot
// release them: each is reported remaining.
func liftCordons(ctx context.Context, a LiftAdmin, cordons map[int32][]Owned, res *LiftResult) ([]string, error) {
	if len(cordons) == 0 {
		return nil, nil
	}
	var rem []string
	var errs []error
	ca, ok := a.(CordonAdmin)
	for _, id := range slices.Sorted(maps.Keys(cordons)) {
		cs := cordons[id]
		if !ok {
			for _, c := range cs {
				rem = append(rem, fmt.Sprintf("cordon of log dir %s on broker %d", c.Value, id))
			}
			errs = append(errs, errors.New("the admin client cannot uncordon log dirs"))
			continue
		}
		done, err := ReleaseCordons(ctx, ca, id, cs)
		errs = append(errs, err)
		for _, d := range done {
			res.Uncordoned = append(res.Uncordoned, fmt.Sprintf("broker %d: %s", id, d))
		}
		// A config change reaches the broker through the metadata log:
		// the read-back waits a bounded moment for what was subtracted.
		left, err := cordonsInPlace(ctx, ca, id, cs)
		for wait := 0; err == nil && len(left) > 0 && len(done) > 0 && wait < readBackTries; wait++ {
			select {
			case <-ctx.Done():
				err = ctx.Err()
			case <-time.After(readBackPause):
				left, err = cordonsInPlace(ctx, ca, id, cs)
			}
		}
		errs = append(errs, err)
		for _, d := range left {
			rem = append(rem, fmt.Sprintf("cordon of log dir %s on broker %d", d, id))
		}
	}
	return rem, errors.Join(errs...)
}

// CordonBrokers lists the brokers whose record claims a cordon.
func (rs Records) CordonBrokers() []int32 {
	var out []int32
	for _, id := range slices.Sorted(maps.Keys(rs.Agents)) {
		if len(rs.Agents[id].AllCordonClaims()) > 0 {
			out = append(out, id)
		}
	}
	return out
}

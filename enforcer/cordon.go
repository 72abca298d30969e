package enforcer

import (
	"context"
	"errors"
	"slices"
)

// Cordoning a log dir (KIP-1066, spec R3.8): a log dir listed in its
// broker's cordoned.log.dirs gets no new partition. The controller leaves
// a broker whose every log dir is cordoned out of the placement of new
// partitions (like a fenced one), and the broker's LogManager places a new
// local replica only in an uncordoned log dir. Existing partitions keep
// writing: a cordon slows a fill caused by new partitions, and loses
// nothing.

// CordonAdmin reads and changes a broker's cordoned log dirs. Implemented
// by internal/kafkaadmin.Enforce and internal/simbroker.Admin.
type CordonAdmin interface {
	// LogDirCordons reads node's log.dirs and cordoned.log.dirs, and the
	// cluster's metadata.version.
	LogDirCordons(ctx context.Context, node int32) (BrokerCordons, error)
	// CordonLogDir appends dir (a log.dirs entry) to node's dynamic
	// cordoned.log.dirs (IncrementalAlterConfigs APPEND): other entries
	// stay.
	CordonLogDir(ctx context.Context, node int32, dir string) error
	// UncordonLogDir subtracts dir from node's dynamic cordoned.log.dirs
	// (IncrementalAlterConfigs SUBTRACT): other entries stay.
	UncordonLogDir(ctx context.Context, node int32, dir string) error
}

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
	// per-broker value overrides them, so the guard does not cordon a
	// broker that has some (its APPEND would drop them while it lasts).
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

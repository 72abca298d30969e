package agent

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Log dir identity (spec R7.1): the guard acts only on log dirs whose
// meta.properties names the cluster it is connected to and the node it
// guards, and that this node confirms as its own log dirs.
//
// The broker names its log dirs by its own paths (log.dirs). The guard
// often sees them elsewhere: in Kubernetes a DaemonSet reads the broker's
// volume under the kubelet's pod directory, a sidecar under its own mount
// path. DescribeLogDirs carries no directory id (Kafka 4.4, v5: path,
// error, total and usable bytes, partitions, cordoned), and meta.properties'
// directory.id is not reported by any admin API, so a log dir is matched
// to the broker's report by its contents:
//
//  1. by path: the broker reports the same path (VMs, a sidecar mounting
//     the volume where the broker has it);
//  2. by contents: the partition directories the guard sees (live and
//     -future) against the partitions the broker places in each of its
//     log dirs. The broker dir must share at least one partition, differ
//     by at most max(2, 5%) of the union (partitions created or deleted
//     between the scan and the request), have the same filesystem size
//     (TotalBytes, statfs f_blocks x f_frsize on both sides, when both are
//     known), and be the only broker dir that fits;
//  3. an empty log dir (no partitions on either side) by filesystem size,
//     when exactly one unmatched empty broker dir has that size. An empty
//     dir holds nothing to delete either way.
//
// Each broker dir confirms at most one of the guard's log dirs.

// BrokerLogDir is one log dir as its broker reports it (DescribeLogDirs).
type BrokerLogDir struct {
	// Path is the broker's own path for the log dir.
	Path string
	// Err is the per-dir error: KAFKA_STORAGE_ERROR when the broker has the
	// dir offline. Nil when it is online.
	Err error
	// TotalBytes and UsableBytes of its filesystem (DescribeLogDirs v4,
	// Kafka 3.3+); -1 when the broker does not say.
	TotalBytes, UsableBytes int64
	// Partitions the broker keeps in the dir; Future the replicas moving
	// into it (-future directories).
	Partitions []TopicPartition
	Future     []TopicPartition
}

// IdentityEvidence is what the cluster says about the node the guard
// belongs to.
type IdentityEvidence struct {
	// ClusterID is the connected cluster's id (DescribeCluster).
	ClusterID string
	// NodeID is the node whose log dirs LogDirs are.
	NodeID int32
	// LogDirs as NodeID reports them (DescribeLogDirs sent to it).
	LogDirs []BrokerLogDir
}

// IdentityReason says why a log dir is not confirmed. Values are metric
// label values.
type IdentityReason string

// Identity reasons (spec R7.1).
const (
	IdentityConfirmed     IdentityReason = ""                       // confirmed
	IdentityUnreadable    IdentityReason = "log_dir_unreadable"     // the last scan could not read the log dir
	IdentityNoMeta        IdentityReason = "no_meta_properties"     // meta.properties missing, or without cluster.id or node.id
	IdentityOtherCluster  IdentityReason = "cluster_mismatch"       // meta.properties names another cluster
	IdentityOtherNode     IdentityReason = "node_mismatch"          // meta.properties names another node
	IdentityNotConfirmed  IdentityReason = "not_confirmed"          // the node reports no log dir that matches it
	IdentityBrokerOffline IdentityReason = "broker_log_dir_offline" // matched, but the broker has it offline
)

// IdentityReasons lists every reason but IdentityConfirmed, for metrics
// that emit each at zero.
func IdentityReasons() []IdentityReason {
	return []IdentityReason{IdentityUnreadable, IdentityNoMeta, IdentityOtherCluster, IdentityOtherNode, IdentityNotConfirmed, IdentityBrokerOffline}
}

// LogDirIdentity is the identity check of one of the guard's log dirs.
type LogDirIdentity struct {
	Path   string
	Reason IdentityReason // IdentityConfirmed when confirmed
	// Detail names what differed, for the log line.
	Detail string
	// BrokerPath is the broker's path for the dir, when matched.
	BrokerPath string
	// MatchedBy is "path", "partitions" or "size" when matched.
	MatchedBy string
}

// Confirmed reports whether the guard may act on the log dir.
func (i LogDirIdentity) Confirmed() bool { return i.Reason == IdentityConfirmed }

// ErrIdentityAmbiguous: the log dirs of the connected cluster belong to
// more than one node, and none was configured.
var ErrIdentityAmbiguous = errors.New("log dirs of several nodes of the cluster")

// GuardedNode picks the node whose log dirs the guard acts on: configured
// when >= 0; else the one node id that the log dirs of clusterID name.
// It fails when no log dir names clusterID, or several nodes do (a glob
// matching several brokers' volumes: configure the broker id).
func GuardedNode(dirs []LogDir, clusterID string, configured int32) (int32, error) {
	if configured >= 0 {
		return configured, nil
	}
	var nodes []int32
	for i := range dirs {
		d := &dirs[i]
		if d.Err == nil && d.ClusterID == clusterID && d.BrokerID >= 0 && !slices.Contains(nodes, d.BrokerID) {
			nodes = append(nodes, d.BrokerID)
		}
	}
	slices.Sort(nodes)
	switch len(nodes) {
	case 0:
		return -1, fmt.Errorf("no log dir names cluster %s in its meta.properties", clusterID)
	case 1:
		return nodes[0], nil
	default:
		return -1, fmt.Errorf("%w: nodes %v of cluster %s; set the broker id", ErrIdentityAmbiguous, nodes, clusterID)
	}
}

// CheckIdentity checks each of dirs against what the cluster says (spec
// R7.1) and returns one result per dir, in the order of dirs. Pure.
func CheckIdentity(dirs []LogDir, ev IdentityEvidence) []LogDirIdentity {
	m := identityMatch{dirs: dirs, ev: ev, out: make([]LogDirIdentity, len(dirs)), used: make([]bool, len(ev.LogDirs))}
	var pending []int // dirs whose meta.properties passed, to be matched
	for i := range dirs {
		m.out[i] = metaIdentity(&dirs[i], ev)
		if m.out[i].Reason == IdentityNotConfirmed {
			pending = append(pending, i)
		}
	}
	// 1. By path.
	for _, i := range pending {
		for j := range ev.LogDirs {
			if !m.used[j] && ev.LogDirs[j].Path == dirs[i].Path {
				m.confirm(i, j, "path")
				break
			}
		}
	}
	// 2. By contents, 3. empty dirs by size.
	for _, i := range pending {
		if m.out[i].MatchedBy == "" {
			m.byContents(i)
		}
	}
	return m.out
}

// metaIdentity checks a log dir's meta.properties against the cluster and
// the guarded node: IdentityNotConfirmed when they agree (the log dir is
// then matched against the broker's).
func metaIdentity(d *LogDir, ev IdentityEvidence) LogDirIdentity {
	r := LogDirIdentity{Path: d.Path}
	switch {
	case d.Err != nil:
		r.Reason, r.Detail = IdentityUnreadable, d.Err.Error()
	case d.ClusterID == "" || d.BrokerID < 0:
		r.Reason, r.Detail = IdentityNoMeta, "meta.properties gives no cluster.id or no node.id"
	case d.ClusterID != ev.ClusterID:
		r.Reason, r.Detail = IdentityOtherCluster, fmt.Sprintf("meta.properties names cluster %s, connected to %s", d.ClusterID, ev.ClusterID)
	case d.BrokerID != ev.NodeID:
		r.Reason, r.Detail = IdentityOtherNode, fmt.Sprintf("meta.properties names node %d, guarding node %d", d.BrokerID, ev.NodeID)
	default:
		r.Reason = IdentityNotConfirmed
	}
	return r
}

// identityMatch matches the agent's log dirs with the broker's: each of
// the broker's log dirs confirms one of the agent's at most.
type identityMatch struct {
	dirs []LogDir
	ev   IdentityEvidence
	out  []LogDirIdentity
	used []bool // of ev.LogDirs
}

// confirm matches dir i with the broker's log dir j.
func (m *identityMatch) confirm(i, j int, by string) {
	m.used[j] = true
	b := &m.ev.LogDirs[j]
	m.out[i].BrokerPath, m.out[i].MatchedBy = b.Path, by
	if b.Err != nil {
		m.out[i].Reason, m.out[i].Detail = IdentityBrokerOffline, fmt.Sprintf("node %d reports log dir %s offline: %v", m.ev.NodeID, b.Path, b.Err)
		return
	}
	m.out[i].Reason, m.out[i].Detail = IdentityConfirmed, ""
}

// byContents matches dir i with the one broker log dir of the same size
// holding the same partitions (a few may differ), or, empty, with the
// one empty broker log dir of its size; otherwise it says why not.
func (m *identityMatch) byContents(i int) {
	ev := m.ev
	mine := dirPartitions(&m.dirs[i])
	var fits, empties []int
	closest := ""
	for j := range ev.LogDirs {
		b := &ev.LogDirs[j]
		if m.used[j] || b.Err != nil || !sameSize(&m.dirs[i], b) {
			continue
		}
		theirs := brokerPartitions(b)
		if len(mine) == 0 && len(theirs) == 0 {
			empties = append(empties, j)
			continue
		}
		shared, only := overlap(mine, theirs)
		if shared > 0 && only <= max(2, (shared+only)/20) {
			fits = append(fits, j)
		} else if shared > 0 && closest == "" {
			closest = fmt.Sprintf("; closest: %s shares %d partitions, %d differ", b.Path, shared, only)
		}
	}
	switch {
	case len(fits) == 1:
		m.confirm(i, fits[0], "partitions")
	case len(fits) > 1:
		m.out[i].Detail = fmt.Sprintf("%d log dirs of node %d hold the same partitions", len(fits), ev.NodeID)
	case len(mine) == 0 && len(empties) == 1:
		m.confirm(i, empties[0], "size")
	default:
		var paths []string
		for _, b := range ev.LogDirs {
			paths = append(paths, b.Path)
		}
		m.out[i].Detail = fmt.Sprintf("node %d reports no log dir with its %d partitions and filesystem size (its log dirs: %s)%s",
			ev.NodeID, len(mine), strings.Join(paths, ", "), closest)
	}
}

func sameSize(d *LogDir, b *BrokerLogDir) bool {
	return !d.Filesystem.Known || b.TotalBytes <= 0 || d.Filesystem.TotalBytes == uint64(b.TotalBytes)
}

// dirPartitions are the live and -future partitions of a log dir.
func dirPartitions(d *LogDir) map[TopicPartition]bool {
	m := make(map[TopicPartition]bool, len(d.Partitions))
	for k := range d.Partitions {
		p := d.Partitions[k]
		if p.Kind == KindLive || p.Kind == KindFuture {
			m[TopicPartition{Topic: p.Topic, Partition: p.Partition}] = true
		}
	}
	return m
}

func brokerPartitions(b *BrokerLogDir) map[TopicPartition]bool {
	m := make(map[TopicPartition]bool, len(b.Partitions)+len(b.Future))
	for _, tp := range b.Partitions {
		m[tp] = true
	}
	for _, tp := range b.Future {
		m[tp] = true
	}
	return m
}

// overlap counts the partitions in both sets and those in only one.
func overlap(a, b map[TopicPartition]bool) (shared, only int) {
	for tp := range a {
		if b[tp] {
			shared++
		} else {
			only++
		}
	}
	return shared, only + len(b) - shared
}

// Package relief plans the move of replicas off brokers whose disks are in
// a band onto brokers with room (spec R3.8): the lossless rung of the
// ladder before anything unexpired is purged. Planning is a pure function
// of what the cluster reports (DescribeLogDirs, DescribeCluster, topic
// metadata); internal/kafkaadmin reads the cluster and runs a plan.
package relief

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
)

// Broker is one broker's disk as the cluster reports it: the sum over its
// log dirs.
type Broker struct {
	ID   int32
	Rack string // "" when the broker has none
	// CapacityBytes and UsedBytes: the log dirs' total bytes and total
	// minus usable bytes (Kafka 3.3+), or the configured capacity and the
	// bytes of the broker's partitions. CapacityBytes 0: unknown, the
	// broker is neither relieved nor a destination.
	CapacityBytes int64
	UsedBytes     int64
}

// Ratio is used over capacity (0 when capacity is unknown).
func (b Broker) Ratio() float64 {
	if b.CapacityBytes <= 0 {
		return 0
	}
	return float64(b.UsedBytes) / float64(b.CapacityBytes)
}

// Partition is one partition's replicas, in Kafka's order (the first is
// the preferred leader), its leader, and its size on each broker holding
// it.
type Partition struct {
	Topic     string
	Partition int32
	Replicas  []int32
	Leader    int32
	Sizes     map[int32]int64
}

// Cluster is what a plan is computed from.
type Cluster struct {
	Brokers    []Broker
	Partitions []Partition
}

// Config chooses what is relieved and how far.
type Config struct {
	// Band: brokers whose usage ratio is at or above it are relieved.
	Band float64
	// Target: replicas move off a relieved broker until its usage is at
	// or under Target, and onto a broker only while its usage stays at or
	// under Target. Zero means Band.
	Target float64
	// MaxMoves bounds the plan's moves; 0: no bound.
	MaxMoves int
	// Exclude lists topics never moved (nor are internal ones: a name
	// starting with __).
	Exclude []string
}

// Move is one replica moved from one broker to another.
type Move struct {
	Topic       string
	Partition   int32
	From, To    int32
	Bytes       int64
	Replicas    []int32 // before
	NewReplicas []int32 // after: To takes From's place (leader order kept)
}

// Plan is a computed reassignment.
type Plan struct {
	Moves []Move
	// Before and After are every broker's usage, by broker id order.
	Before, After []Broker
	// Unrelieved are the brokers still at or above Target after the plan:
	// the reason is in Why.
	Unrelieved []int32
	Why        map[int32]string
}

// Compute plans moves off every broker at or above cfg.Band, the fullest
// first. For each, it takes the replicas it follows (never one it leads
// or is the preferred leader of: leaders are kept), largest first, and
// puts each on the broker that stays at or under the target and, among
// those, keeps the partition's racks (the same rack as the replica's, else
// a rack none of the partition's other replicas is on), then has the most
// room left. It stops once the broker is at or under the target.
func Compute(c Cluster, cfg Config) Plan {
	if cfg.Target == 0 {
		cfg.Target = cfg.Band
	}
	brokers := map[int32]*Broker{}
	ids := make([]int32, 0, len(c.Brokers))
	for _, b := range c.Brokers {
		b := b
		brokers[b.ID] = &b
		ids = append(ids, b.ID)
	}
	slices.Sort(ids)
	p := Plan{Why: map[int32]string{}}
	for _, id := range ids {
		p.Before = append(p.Before, *brokers[id])
	}
	sources := slices.Clone(ids)
	slices.SortStableFunc(sources, func(a, b int32) int { return cmp.Compare(brokers[b].Ratio(), brokers[a].Ratio()) })
	moved := map[string]bool{} // topic/partition already moved in this plan
	for _, src := range sources {
		sb := brokers[src]
		if sb.CapacityBytes <= 0 || sb.Ratio() < cfg.Band {
			continue
		}
		cands := candidates(c, src, cfg, moved)
		for _, part := range cands {
			if sb.Ratio() <= cfg.Target || (cfg.MaxMoves > 0 && len(p.Moves) >= cfg.MaxMoves) {
				break
			}
			size := part.Sizes[src]
			dst, ok := destination(brokers, ids, part, src, cfg.Target)
			if !ok {
				continue
			}
			nr := slices.Clone(part.Replicas)
			nr[slices.Index(nr, src)] = dst
			p.Moves = append(p.Moves, Move{Topic: part.Topic, Partition: part.Partition, From: src, To: dst, Bytes: size,
				Replicas: slices.Clone(part.Replicas), NewReplicas: nr})
			moved[key(part)] = true
			sb.UsedBytes -= size
			brokers[dst].UsedBytes += size
		}
		if sb.Ratio() > cfg.Target {
			p.Unrelieved = append(p.Unrelieved, src)
			switch {
			case cfg.MaxMoves > 0 && len(p.Moves) >= cfg.MaxMoves:
				p.Why[src] = fmt.Sprintf("the plan reached --max-moves %d", cfg.MaxMoves)
			case len(cands) == 0:
				p.Why[src] = "it leads (or is the preferred leader of) every replica it holds, or holds only internal or excluded topics"
			default:
				p.Why[src] = "no other broker has room for its replicas under the target without breaking their rack spread"
			}
		}
	}
	for _, id := range ids {
		p.After = append(p.After, *brokers[id])
	}
	return p
}

func key(p *Partition) string { return fmt.Sprintf("%s/%d", p.Topic, p.Partition) }

// candidates are the replicas on src that may move, largest first.
func candidates(c Cluster, src int32, cfg Config, moved map[string]bool) []*Partition {
	var out []*Partition
	for i := range c.Partitions {
		p := &c.Partitions[i]
		if !slices.Contains(p.Replicas, src) || p.Leader == src || p.Replicas[0] == src ||
			agent.HasInternalPrefix(p.Topic) || slices.Contains(cfg.Exclude, p.Topic) || moved[key(p)] || p.Sizes[src] <= 0 {
			continue
		}
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b *Partition) int {
		if c := cmp.Compare(b.Sizes[src], a.Sizes[src]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	return out
}

// destination picks the broker for part's replica on src (its size
// there).
func destination(brokers map[int32]*Broker, ids []int32, part *Partition, src int32, target float64) (int32, bool) {
	size := part.Sizes[src]
	srcRack := brokers[src].Rack
	otherRacks := map[string]bool{}
	for _, r := range part.Replicas {
		if b, ok := brokers[r]; ok && r != src {
			otherRacks[b.Rack] = true
		}
	}
	best, bestRank, bestRoom := int32(-1), 3, int64(0)
	for _, id := range ids {
		b := brokers[id]
		if id == src || slices.Contains(part.Replicas, id) || b.CapacityBytes <= 0 {
			continue
		}
		after := float64(b.UsedBytes+size) / float64(b.CapacityBytes)
		if after > target {
			continue
		}
		// Rack rank: 0 same rack as the replica moved (the spread is
		// unchanged), 1 a rack no other replica is on; else refused.
		rank := 2
		switch {
		case b.Rack == srcRack:
			rank = 0
		case !otherRacks[b.Rack]:
			rank = 1
		}
		if rank == 2 {
			continue
		}
		room := b.CapacityBytes - b.UsedBytes - size
		if rank < bestRank || rank == bestRank && room > bestRoom {
			best, bestRank, bestRoom = id, rank, room
		}
	}
	return best, best >= 0
}

// ReassignmentJSON is the file kafka-reassign-partitions.sh takes
// (--reassignment-json-file): the moved partitions' new replicas, or with
// rollback their replicas before the plan.
func (p Plan) ReassignmentJSON(rollback bool) ([]byte, error) {
	type part struct {
		Topic     string  `json:"topic"`
		Partition int32   `json:"partition"`
		Replicas  []int32 `json:"replicas"`
	}
	doc := struct {
		Version    int    `json:"version"`
		Partitions []part `json:"partitions"`
	}{Version: 1, Partitions: []part{}}
	for _, m := range p.Moves {
		r := m.NewReplicas
		if rollback {
			r = m.Replicas
		}
		doc.Partitions = append(doc.Partitions, part{m.Topic, m.Partition, r})
	}
	return json.Marshal(doc)
}

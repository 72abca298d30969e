package agent

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Checkpoints holds the offsets a log dir's checkpoint files record.
type Checkpoints struct {
	// LogStart from log-start-offset-checkpoint. Kafka lists only the
	// partitions whose log start offset is above their first segment's base
	// offset (after DeleteRecords or retention); the others start at their
	// first segment.
	LogStart map[TopicPartition]int64
	// HighWatermark from replication-offset-checkpoint.
	HighWatermark map[TopicPartition]int64
	// table, when not nil, holds both maps' entries instead (the maps
	// are then nil): the form the live agent keeps (compact).
	table *cpTable
}

// cpTable is a log dir's checkpoints in 16 bytes an entry, sorted by
// key: the two maps took about 32 bytes an entry (a 24-byte key and an
// 8-byte value, at 7/8 load), 6.4 MB of the live agent's heap at 100,000
// partitions. replication-offset-checkpoint names every partition;
// log-start-offset-checkpoint only those whose log start offset is above
// their first segment's base offset.
type cpTable struct {
	topics        []string  // both files' topics, distinct, sorted
	logStart, hwm []cpEntry // by key
}

// cpEntry is one checkpoint line in a cpTable. key is the topic's index
// in cpTable.topics in the upper 32 bits, the partition in the lower.
type cpEntry struct {
	key    uint64
	offset int64
}

// compact returns cp in the form the live agent keeps: the same Offsets,
// half the memory. Its maps are nil.
func (cp Checkpoints) compact() Checkpoints {
	if cp.table != nil {
		return cp
	}
	seen := make(map[string]struct{})
	for tp := range cp.LogStart {
		seen[tp.Topic] = struct{}{}
	}
	for tp := range cp.HighWatermark {
		seen[tp.Topic] = struct{}{}
	}
	t := &cpTable{topics: make([]string, 0, len(seen))}
	for topic := range seen {
		t.topics = append(t.topics, topic)
	}
	slices.Sort(t.topics)
	entries := func(m map[TopicPartition]int64) []cpEntry {
		es := make([]cpEntry, 0, len(m))
		for tp, off := range m {
			i, _ := slices.BinarySearch(t.topics, tp.Topic)
			es = append(es, cpEntry{key: cpKey(i, tp.Partition), offset: off})
		}
		slices.SortFunc(es, func(a, b cpEntry) int { return cmp.Compare(a.key, b.key) })
		return es
	}
	t.logStart, t.hwm = entries(cp.LogStart), entries(cp.HighWatermark)
	return Checkpoints{table: t}
}

func cpKey(topic int, partition int32) uint64 {
	return uint64(topic)<<32 | uint64(uint32(partition))
}

// offsets is Checkpoints.Offsets on the table: -1 where a file does not
// name tp.
func (t *cpTable) offsets(tp TopicPartition) (logStart, hw int64) {
	logStart, hw = -1, -1
	i, ok := slices.BinarySearch(t.topics, tp.Topic)
	if !ok {
		return logStart, hw
	}
	k := cpKey(i, tp.Partition)
	find := func(es []cpEntry) (int64, bool) {
		j, ok := slices.BinarySearchFunc(es, k, func(e cpEntry, k uint64) int { return cmp.Compare(e.key, k) })
		if !ok {
			return 0, false
		}
		return es[j].offset, true
	}
	if v, ok := find(t.logStart); ok {
		logStart = v
	}
	if v, ok := find(t.hwm); ok {
		hw = v
	}
	return logStart, hw
}

// Offsets looks a partition's log start offset and high watermark up in
// its log dir's checkpoints, -1 where the checkpoint has no entry. Only a
// live or -future log takes them: a -future log's offsets are
// checkpointed in its own log dir (ReplicaManager checkpoints the future
// log's high watermark there), which never also holds the live log; a
// -delete or -stray directory of the same partition is not that log. The
// scanner and the live agent's checkpoint re-read both use it.
func (cp Checkpoints) Offsets(p *Partition) (logStart, hw int64) {
	logStart, hw = -1, -1
	if p.Kind != KindLive && p.Kind != KindFuture {
		return logStart, hw
	}
	tp := TopicPartition{Topic: p.Topic, Partition: p.Partition}
	if cp.table != nil {
		return cp.table.offsets(tp)
	}
	if v, ok := cp.LogStart[tp]; ok {
		logStart = v
	}
	if v, ok := cp.HighWatermark[tp]; ok {
		hw = v
	}
	return logStart, hw
}

// Checkpoint file names at a log dir's root.
const (
	logStartOffsetCheckpoint = "log-start-offset-checkpoint"
	replicationCheckpoint    = "replication-offset-checkpoint"
	metaProperties           = "meta.properties"
)

// parseCheckpoint parses Kafka's offset checkpoint format: a version line
// ("0"), an entry count line, then "topic partition offset" lines. On error
// it returns what it could parse before the error. An empty file has no
// entries: Kafka creates its checkpoint files empty at start and reads them
// so (CheckpointFile's reader returns an empty list at end of file).
func parseCheckpoint(data []byte) (map[TopicPartition]int64, error) {
	out := make(map[TopicPartition]int64)
	// One copy of each topic name: a log dir of 100,000 partitions kept
	// 100,000 copies of a hundred names (the live agent holds the parsed
	// checkpoints).
	topics := map[string]string{}
	if len(data) == 0 {
		return out, nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 512), 1024)
	line := 0
	want := -1
	for sc.Scan() {
		line++
		text := sc.Text()
		switch line {
		case 1:
			if strings.TrimSpace(text) != "0" {
				return out, fmt.Errorf("line 1: unsupported checkpoint version %q", text)
			}
			continue
		case 2:
			n, err := strconv.Atoi(strings.TrimSpace(text))
			if err != nil || n < 0 {
				return out, fmt.Errorf("line 2: bad entry count %q", text)
			}
			want = n
			continue
		}
		f := strings.Fields(text)
		if len(f) != 3 {
			return out, fmt.Errorf("line %d: want \"topic partition offset\", got %q", line, text)
		}
		p, err := strconv.ParseInt(f[1], 10, 32)
		if err != nil || p < 0 || !validTopicName(f[0]) {
			return out, fmt.Errorf("line %d: bad topic partition %q", line, text)
		}
		off, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return out, fmt.Errorf("line %d: bad offset %q", line, text)
		}
		topic, ok := topics[f[0]]
		if !ok {
			topic = strings.Clone(f[0]) // not the whole line's memory
			topics[topic] = topic
		}
		out[TopicPartition{topic, int32(p)}] = off
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("line %d: %w", line+1, err)
	}
	if want < 0 {
		return out, fmt.Errorf("truncated: %d lines", line)
	}
	if len(out) != want || line-2 != want {
		return out, fmt.Errorf("entry count %d, found %d entries", want, line-2)
	}
	return out, nil
}

// parseMetaProperties reads node.id (or the older broker.id) and cluster.id
// from a meta.properties file (Java properties: key=value, # comments).
func parseMetaProperties(data []byte) (brokerID int32, clusterID string, err error) {
	brokerID = -1
	var node, broker string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			k, v, ok = strings.Cut(line, ":")
		}
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "node.id":
			node = strings.TrimSpace(v)
		case "broker.id":
			broker = strings.TrimSpace(v)
		case "cluster.id":
			clusterID = strings.TrimSpace(v)
		}
	}
	id := node
	if id == "" {
		id = broker
	}
	if id == "" {
		return -1, clusterID, fmt.Errorf("no node.id or broker.id")
	}
	n, perr := strconv.ParseInt(id, 10, 32)
	if perr != nil || n < 0 {
		return -1, clusterID, fmt.Errorf("bad node.id %q", id)
	}
	return int32(n), clusterID, nil
}

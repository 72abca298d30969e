package agent

import (
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"
	"unsafe"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// The compact checkpoints the live agent keeps answer Offsets as the two
// maps do, for every partition either file names, for partitions and
// topics neither names, for an explicit -1 and a negative offset, and for
// the kinds that take no offsets.
func TestCheckpointsCompactOffsetsAsMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 1))
	cp := Checkpoints{LogStart: map[TopicPartition]int64{}, HighWatermark: map[TopicPartition]int64{}}
	topics := []string{"a", "a.b", "a-b", "orders", "z", "__consumer_offsets", "only-ls", "only-hw"}
	for _, topic := range topics {
		for p := range int32(40) {
			tp := TopicPartition{topic, p}
			switch r := rng.IntN(6); {
			case topic == "only-hw" || r == 0:
				cp.HighWatermark[tp] = rng.Int64N(1 << 40)
			case topic == "only-ls" || r == 1:
				cp.LogStart[tp] = rng.Int64N(1 << 40)
			case r == 2:
				cp.LogStart[tp], cp.HighWatermark[tp] = -1, -7
			case r == 3:
			default:
				cp.LogStart[tp], cp.HighWatermark[tp] = rng.Int64N(1<<40), rng.Int64N(1<<40)
			}
		}
	}
	c := cp.compact()
	if c.LogStart != nil || c.HighWatermark != nil || c.table == nil {
		t.Fatalf("compact kept its maps (%d, %d entries) or has no table", len(c.LogStart), len(c.HighWatermark))
	}
	n := 0
	for _, topic := range append(topics, "", "b", "orders2", "zz") {
		for p := int32(-1); p < 42; p++ {
			for _, kind := range []PartitionKind{KindLive, KindFuture, KindStray, KindDeleted, KindMetadata} {
				part := &Partition{Topic: topic, Partition: p, Kind: kind}
				ls, hw := cp.Offsets(part)
				gls, ghw := c.Offsets(part)
				if gls != ls || ghw != hw {
					t.Fatalf("%s-%d (%s): compact gives %d, %d; the maps %d, %d", topic, p, kind, gls, ghw, ls, hw)
				}
				if ls != -1 || hw != -1 {
					n++
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no partition had an offset")
	}
	if e := (Checkpoints{LogStart: map[TopicPartition]int64{}, HighWatermark: map[TopicPartition]int64{}}).compact(); e.table == nil || len(e.table.logStart)+len(e.table.hwm) != 0 {
		t.Fatalf("empty checkpoints: %+v", e.table)
	}
}

// The compact checkpoints take 16 bytes a line of a checkpoint file (the
// maps took about 32), with no spare capacity, and one copy of each
// topic name.
func TestCheckpointsCompactSize(t *testing.T) {
	cp := Checkpoints{LogStart: map[TopicPartition]int64{}, HighWatermark: map[TopicPartition]int64{}}
	for i := range 1000 {
		tp := TopicPartition{fmt.Sprintf("topic-%d", i/10), int32(i % 10)}
		cp.HighWatermark[tp] = int64(i)
		if i%4 == 0 {
			cp.LogStart[tp] = int64(i)
		}
	}
	c := cp.compact()
	if s := unsafe.Sizeof(cpEntry{}); s != 16 {
		t.Errorf("an entry takes %d bytes, want 16", s)
	}
	if len(c.table.hwm) != 1000 || cap(c.table.hwm) != 1000 || len(c.table.logStart) != 250 || cap(c.table.logStart) != 250 {
		t.Errorf("entries (length, capacity): high watermarks %d, %d, log starts %d, %d; want 1000, 1000, 250, 250",
			len(c.table.hwm), cap(c.table.hwm), len(c.table.logStart), cap(c.table.logStart))
	}
	if len(c.table.topics) != 100 || cap(c.table.topics) != 100 {
		t.Errorf("%d topics, capacity %d, want 100, 100", len(c.table.topics), cap(c.table.topics))
	}
}

// The live agent keeps its log dirs' checkpoints compact, from its first
// scan and after a re-read, and its partitions take their offsets from
// them.
func TestLiveKeepsCheckpointsCompact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	if _, err := logdirgen.Generate(dir, logdirgen.Uniform(time.Now(), 4, 5, 2, 4<<10)); err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{LogDirs: []string{dir}}, slog.New(slog.NewTextHandler(io.Discard, nil)), testConfigs())
	if err != nil {
		t.Fatal(err)
	}
	l := &loop{a: a, rescans: map[string]uint64{}, ownErrs: map[ErrorKind]uint64{}, seed: maphash.MakeSeed()}
	l.expand()
	l.fullScan("start")
	check := func(when string) {
		d := l.dirs[0]
		if d.cp.table == nil || d.cp.LogStart != nil || d.cp.HighWatermark != nil {
			t.Fatalf("%s: the loop keeps the checkpoints' maps", when)
		}
		want := a.scanner.ReadCheckpoints(dir)
		withHW := 0
		for _, ps := range d.parts {
			ls, hw := want.Offsets(ps.part)
			if ps.part.LogStartOffset != ls || ps.part.HighWatermark != hw {
				t.Errorf("%s: %s offsets %d, %d, want %d, %d", when, ps.part.Dir, ps.part.LogStartOffset, ps.part.HighWatermark, ls, hw)
			}
			if hw >= 0 {
				withHW++
			}
		}
		if withHW == 0 {
			t.Fatalf("%s: no partition has a high watermark", when)
		}
	}
	check("after the first scan")
	cps := []logdirgen.Checkpoint{{Topic: "topic.0000", Partition: 1, LogStartOffset: 0, HighWatermark: 3}}
	if err := logdirgen.WriteCheckpoints(dir, cps); err != nil {
		t.Fatal(err)
	}
	l.dirs[0].cpDirty = true
	l.flush(false)
	check("after a re-read")
}

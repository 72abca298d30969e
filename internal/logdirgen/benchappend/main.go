// Command benchappend plays a broker writing into a generated log dir, for
// scripts/bench-agent.sh: it adds a hot topic to the log dir and appends
// to its partitions at a steady rate, rolling at segment.bytes and
// deleting the oldest segments as retention would, until interrupted or
// the duration passes. It then removes the hot topic's directories.
//
//	benchappend LOGDIR PARTITIONS BYTES_PER_SECOND SEGMENT_BYTES DURATION
//
// It prints "started" once the topic is in place and one line at the end: batches appended, segments rolled and
// deleted.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// hotTopic names the appended topic; a directory of it left by an
// interrupted run is removed at start.
const hotTopic = "bench.hot"

// keepSegments: older segments are deleted (renamed .deleted, removed at
// the next tick) once a partition has more.
const keepSegments = 4

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchappend:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) != 5 {
		return fmt.Errorf("usage: benchappend LOGDIR PARTITIONS BYTES_PER_SECOND SEGMENT_BYTES DURATION")
	}
	logDir := args[0]
	var n [3]int64
	for i, a := range args[1:4] {
		v, err := strconv.ParseInt(a, 10, 64)
		if err != nil || v <= 0 {
			return fmt.Errorf("%s: want a positive integer", a)
		}
		n[i] = v
	}
	parts, rate, segBytes := n[0], n[1], n[2]
	dur, err := time.ParseDuration(args[4])
	if err != nil {
		return err
	}
	stale, _ := filepath.Glob(filepath.Join(logDir, hotTopic+"-*"))
	for _, d := range stale {
		os.RemoveAll(d)
	}
	// Generate the hot topic beside the log dir, then move its partition
	// directories in: the agent sees new partitions appear.
	staging, err := os.MkdirTemp(filepath.Dir(filepath.Clean(logDir)), ".benchappend-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(staging)
	now := time.Now()
	spec := logdirgen.Spec{Now: now, NodeID: 1, Sparse: true, Topics: []logdirgen.Topic{{
		Name: hotTopic, Partitions: int32(parts),
		Segments: []logdirgen.Segment{{Bytes: segBytes, Age: time.Minute}, {Bytes: 0}},
	}}}
	res, err := logdirgen.Generate(filepath.Join(staging, "d"), spec)
	if err != nil {
		return err
	}
	var logs []*logdirgen.Log
	for _, p := range res.Partitions {
		if err := os.Rename(filepath.Join(res.Dir, p.Dir), filepath.Join(logDir, p.Dir)); err != nil {
			return err
		}
		defer os.RemoveAll(filepath.Join(logDir, p.Dir))
		l, err := logdirgen.OpenLog(logDir, spec, p, segBytes)
		if err != nil {
			return err
		}
		logs = append(logs, l)
	}

	// Set up: the duration starts now.
	fmt.Println("started")
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	return appendUntil(ctx, logs, rate)
}

// appendUntil appends to logs at rate bytes per second in all, rolling
// segments and deleting the oldest beyond keepSegments, until ctx ends;
// then it prints what it did.
func appendUntil(ctx context.Context, logs []*logdirgen.Log, rate int64) error {
	const tick = 100 * time.Millisecond
	batchBytes := int64(logdirgen.DefaultBatchBytes)
	perTick := float64(rate) * tick.Seconds() / float64(batchBytes) / float64(len(logs))
	var owed float64
	var batches, rolled, deleted int64
	var pending []string
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Printf("appended batches=%d bytes=%d rolled=%d deleted=%d partitions=%d\n",
				batches, batches*batchBytes, rolled, deleted, len(logs))
			return nil
		case <-t.C:
		}
		if err := logdirgen.RemoveFiles(pending); err != nil {
			return err
		}
		pending = pending[:0]
		owed += perTick
		k := int64(owed)
		owed -= float64(k)
		if k == 0 {
			continue
		}
		ts := time.Now()
		for _, l := range logs {
			before := len(l.Segments())
			if err := l.Append(k, ts); err != nil {
				return err
			}
			batches += k
			rolled += int64(len(l.Segments()) - before)
			if extra := len(l.Segments()) - keepSegments; extra > 0 {
				gone, err := l.DeleteOldest(extra, ts)
				if err != nil {
					return err
				}
				pending = append(pending, gone...)
				deleted += int64(extra)
			}
		}
	}
}

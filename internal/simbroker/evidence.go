package simbroker

import (
	"context"
	"fmt"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/rights"
)

// Evidence is what the simulated cluster says before a destructive action
// (spec R7), as a real one would: its cluster id, the broker's own report
// of its log dir (the path it writes, the partitions in it), and the
// rights of the guard's principal: all of them (the simulated broker has
// no authorizer to refuse the guard).
type Evidence struct{ b *Broker }

var _ enforcer.Evidence = (*Evidence)(nil)

// Evidence is the broker's evidence side.
func (b *Broker) Evidence() *Evidence { return &Evidence{b: b} }

func (e *Evidence) ClusterID(ctx context.Context) (string, error) {
	return call(ctx, &Admin{e.b}, func(b *Broker) (string, error) { return b.cfg.ClusterID, nil })
}

func (e *Evidence) BrokerLogDirs(ctx context.Context, node int32) ([]agent.BrokerLogDir, error) {
	return call(ctx, &Admin{e.b}, func(b *Broker) ([]agent.BrokerLogDir, error) {
		if node != b.cfg.NodeID {
			return nil, fmt.Errorf("broker %d: no such broker in the simulated cluster", node)
		}
		d := agent.BrokerLogDir{Path: b.cfg.Dir, TotalBytes: -1, UsableBytes: -1}
		for _, p := range b.parts {
			d.Partitions = append(d.Partitions, agent.TopicPartition{Topic: p.topic.Name, Partition: p.log.Partition()})
		}
		if b.cfg.Spare {
			return []agent.BrokerLogDir{d, {Path: b.SpareLogDir(), TotalBytes: -1, UsableBytes: -1}}, nil
		}
		return []agent.BrokerLogDir{d}, nil
	})
}

func (e *Evidence) Rights(ctx context.Context, q rights.Query) (rights.Report, error) {
	return everyRight(ctx, q)
}

// everyRight is a simulated broker's answer to a rights query: the
// principal holds every right the query asks about (observe included).
func everyRight(ctx context.Context, q rights.Query) (rights.Report, error) {
	if err := ctx.Err(); err != nil {
		return rights.Report{}, err
	}
	features := q.Features
	if len(features) == 0 || features[0] != rights.Observe {
		features = append([]rights.Feature{rights.Observe}, features...)
	}
	return rights.Report{Features: features, Checked: len(q.Topics)}, nil
}

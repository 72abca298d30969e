package simbroker

import (
	"context"
	"fmt"
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// Log dir cordons (KIP-1066) as Kafka 4.4 keeps them: each broker's
// dynamic cordoned.log.dirs, changed one entry at a time by
// IncrementalAlterConfigs APPEND (an entry already there is not repeated)
// and SUBTRACT (an absent one is no error); an entry must be one of the
// broker's log.dirs (else INVALID_REQUEST). Each simulated broker has its
// watched log dir and a spare one (SpareLogDir) the agent does not watch,
// so the guard's log dir is not the broker's last uncordoned one unless
// the spare is cordoned.

var _ enforcer.CordonAdmin = (*ClusterAdmin)(nil)

// CordonMetadataVersion is the simulated cluster's metadata.version
// feature level (4.4-IV0).
const CordonMetadataVersion = 31

// SpareLogDir is broker id's second log dir.
func (c *Cluster) SpareLogDir(id int32) string { return c.brokers[id].dir + "-spare" }

// LogDirs is broker id's log.dirs.
func (c *Cluster) LogDirs(id int32) []string { return []string{c.brokers[id].dir, c.SpareLogDir(id)} }

// Cordoned is broker id's dynamic cordoned.log.dirs.
func (c *Cluster) Cordoned(id int32) []string { return slices.Clone(c.cordons[id]) }

func (a *ClusterAdmin) LogDirCordons(ctx context.Context, node int32) (enforcer.BrokerCordons, error) {
	if err := a.c.Faults.before(ctx, a.Who, "LogDirCordons"); err != nil {
		return enforcer.BrokerCordons{}, err
	}
	n := a.c.brokers[node]
	if n == nil || !n.alive {
		return enforcer.BrokerCordons{}, fmt.Errorf("broker %d: %w", node, ErrNoBroker)
	}
	st := enforcer.BrokerCordons{MetadataVersion: CordonMetadataVersion, LogDirs: a.c.LogDirs(node), Dynamic: a.c.Cordoned(node)}
	return st, a.c.Faults.after(a.Who, "LogDirCordons")
}

func (a *ClusterAdmin) CordonLogDir(ctx context.Context, node int32, dir string) error {
	return a.alterCordon(ctx, node, dir, true)
}

func (a *ClusterAdmin) UncordonLogDir(ctx context.Context, node int32, dir string) error {
	return a.alterCordon(ctx, node, dir, false)
}

func (a *ClusterAdmin) alterCordon(ctx context.Context, node int32, dir string, add bool) error {
	method := "UncordonLogDir"
	if add {
		method = "CordonLogDir"
	}
	if err := a.c.Faults.before(ctx, a.Who, method); err != nil {
		return err
	}
	n := a.c.brokers[node]
	if n == nil || !n.alive {
		return fmt.Errorf("broker %d: %w", node, ErrNoBroker)
	}
	if !slices.Contains(a.c.LogDirs(node), dir) {
		return fmt.Errorf("%w: All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : %s", ErrInvalidRequest, dir)
	}
	if a.c.cordons == nil {
		a.c.cordons = map[int32][]string{}
	}
	cur := a.c.cordons[node]
	switch {
	case add && !slices.Contains(cur, dir):
		a.c.cordons[node] = append(slices.Clone(cur), dir)
	case !add:
		a.c.cordons[node] = slices.DeleteFunc(slices.Clone(cur), func(d string) bool { return d == dir })
	}
	a.took(method, dir)
	return a.c.Faults.after(a.Who, method)
}

package simbroker

import (
	"context"
	"fmt"
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
)

// The single simulated broker's log dir cordons (KIP-1066), as the
// cluster's (cordon.go): its log.dirs are its log dir and a spare one the
// agent does not watch, so the watched log dir is never the broker's last
// uncordoned one and the demo shows the cordon rung.

var _ enforcer.CordonAdmin = (*Admin)(nil)

// SpareLogDir is the broker's second log.dirs entry (no partition lives
// in it).
func (b *Broker) SpareLogDir() string { return b.cfg.Dir + "-spare" }

// Cordoned is the broker's dynamic cordoned.log.dirs.
func (b *Broker) Cordoned() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.cordoned)
}

func (a *Admin) LogDirCordons(ctx context.Context, node int32) (enforcer.BrokerCordons, error) {
	return call(ctx, a, func(b *Broker) (enforcer.BrokerCordons, error) {
		if node != b.cfg.NodeID {
			return enforcer.BrokerCordons{}, fmt.Errorf("broker %d: %w", node, ErrNoBroker)
		}
		return enforcer.BrokerCordons{MetadataVersion: CordonMetadataVersion, LogDirs: []string{b.cfg.Dir, b.SpareLogDir()},
			Dynamic: slices.Clone(b.cordoned)}, nil
	})
}

func (a *Admin) CordonLogDir(ctx context.Context, node int32, dir string) error {
	return a.alterCordon(ctx, node, dir, true)
}

func (a *Admin) UncordonLogDir(ctx context.Context, node int32, dir string) error {
	return a.alterCordon(ctx, node, dir, false)
}

// alterCordon is IncrementalAlterConfigs APPEND (add) or SUBTRACT of one
// entry, which must be one of the broker's log.dirs.
func (a *Admin) alterCordon(ctx context.Context, node int32, dir string, add bool) error {
	_, err := call(ctx, a, func(b *Broker) (struct{}, error) {
		if node != b.cfg.NodeID {
			return struct{}{}, fmt.Errorf("broker %d: %w", node, ErrNoBroker)
		}
		if dir != b.cfg.Dir && dir != b.SpareLogDir() {
			return struct{}{}, fmt.Errorf("%w: All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : %s", ErrInvalidRequest, dir)
		}
		switch {
		case add && !slices.Contains(b.cordoned, dir):
			b.cordoned = append(slices.Clone(b.cordoned), dir)
		case !add:
			b.cordoned = slices.DeleteFunc(slices.Clone(b.cordoned), func(d string) bool { return d == dir })
		}
		return struct{}{}, nil
	})
	return err
}

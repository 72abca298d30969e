package kafkaadmin

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Offline is the enforcer's admin API without a cluster: there are no
// protection records to read (the guard cannot have set any), the
// cluster's brokers and settings are unknown, and every other call
// answers ErrNotConnected. Without a cluster there is nothing to cordon
// with: the cordon reads answer ErrCordonUnsupported, so a full log dir's
// cordon is held as "unsupported", not as a failed read to alert on.
func Offline(ownershipTopic string, logger *slog.Logger) enforcer.Admin {
	return offline{NewLink(Config{}, logger, LinkOptions{}).Enforce(ownershipTopic)}
}

type offline struct{ *Enforce }

func (offline) LoadRecords(context.Context) (ledger.Records, error) {
	return ledger.NewRecords(), nil
}

func (offline) LiveBrokers(context.Context) ([]int32, error) { return nil, nil }

func (offline) AllowEveryoneIfNoACLFound(context.Context) (ledger.AllowEveryone, error) {
	return ledger.AllowEveryoneUnknown, nil
}

func (offline) LogDirCordons(context.Context, int32) (enforcer.BrokerCordons, error) {
	return enforcer.BrokerCordons{}, fmt.Errorf("no cluster configured: %w", enforcer.ErrCordonUnsupported)
}

package kafkaadmin

import (
	"context"
	"log/slog"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// Offline is the enforcer's admin API without a cluster: there are no
// protection records to read (the guard cannot have set any), the
// cluster's brokers and settings are unknown, and every other call
// answers ErrNotConnected.
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

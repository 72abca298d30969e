package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/agent"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/kafkaadmin"
	"github.com/kafka-disk-guard/kafka-disk-guard/reserve"
)

// errNoBroker is returned while no connection to the cluster exists: the
// enforcer then takes no destructive action and reports broker_unreachable
// (spec R6), the admission endpoint answers 503.
var errNoBroker = errors.New("kafka cluster not reachable")

// kafkaLink owns the connection to the cluster. The guard starts watching
// at once; the link connects in the background with capped exponential
// backoff (a DaemonSet often starts before its broker) and, once
// connected, feeds topic configs, the enforcer and the admission endpoint.
type kafkaLink struct {
	cfg      kafkaadmin.Config
	ownTopic string
	// enforcing: create the ownership topic as soon as connected, so the
	// first protection does not wait for it.
	enforcing bool
	logger    *slog.Logger

	mu           sync.Mutex
	enforce      *kafkaadmin.Enforce
	admin        sarama.ClusterAdmin
	reserveAdmin sarama.ClusterAdmin
	configs      *agent.ConfigRefresher
	reserveH     http.Handler
}

// configSource switches the agent from offline configs to the cluster's
// once they have been fetched.
type configSource struct {
	link    *kafkaLink
	offline agent.ConfigSet
}

func (c configSource) Current() agent.ConfigSet {
	if c.link != nil {
		c.link.mu.Lock()
		r := c.link.configs
		c.link.mu.Unlock()
		if r != nil {
			return r.Current()
		}
	}
	return c.offline
}

// Run connects, then runs the config refresher until ctx ends.
func (k *kafkaLink) Run(ctx context.Context, brokerID int32, topics func() []string, initial agent.ConfigSet,
	refresh time.Duration, admission reserve.Config) error {
	backoff := time.Second
	for {
		err := k.connect(ctx, brokerID, topics, initial, refresh, admission)
		if err == nil {
			break
		}
		k.logger.Error("kafka connection failed, retrying", "err", err, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
	k.logger.Info("kafka connected", "bootstrap_servers", k.cfg.BootstrapServers)
	defer k.close()
	return k.configs.Run(ctx)
}

func (k *kafkaLink) connect(ctx context.Context, brokerID int32, topics func() []string, initial agent.ConfigSet, refresh time.Duration, admission reserve.Config) error {
	client, admin, err := kafkaadmin.Connect(k.cfg)
	if err != nil {
		return err
	}
	enf, err := kafkaadmin.NewEnforceFromConfig(k.cfg, k.ownTopic)
	if err != nil {
		admin.Close()
		return err
	}
	if k.enforcing {
		if err := enf.Prepare(ctx); err != nil {
			k.logger.Warn("prepare ownership topic, retried on first use", "err", err)
		}
	}
	// Admission gets a connection of its own: a broker serves one request
	// per connection at a time, and a topic creation waits on its answer.
	_, reserveAdmin, err := kafkaadmin.Connect(k.cfg)
	if err != nil {
		enf.Close()
		admin.Close()
		return err
	}
	refresher, err := agent.NewConfigRefresher(agent.ConfigRefresherConfig{Interval: refresh}, k.logger,
		kafkaadmin.NewConfigFetcher(client, brokerID), topics, initial)
	if err != nil {
		enf.Close()
		admin.Close()
		reserveAdmin.Close()
		return err
	}
	k.mu.Lock()
	k.enforce, k.admin, k.reserveAdmin, k.configs = enf, admin, reserveAdmin, refresher
	k.reserveH = reserve.NewHandler(admission, k.logger, kafkaadmin.NewClusterReader(reserveAdmin))
	k.mu.Unlock()
	return nil
}

// FollowTopics tells the config refresher, once connected, whenever the
// agent's partition directories changed, so a new topic's configs are
// fetched at once (spec R7.2). It returns when ctx ends.
func (k *kafkaLink) FollowTopics(ctx context.Context, changed <-chan struct{}) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			k.mu.Lock()
			r := k.configs
			k.mu.Unlock()
			if r != nil {
				r.Notify()
			}
		}
	}
}

func (k *kafkaLink) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.enforce != nil {
		k.enforce.Close()
	}
	for _, a := range []sarama.ClusterAdmin{k.admin, k.reserveAdmin} {
		if a != nil {
			a.Close()
		}
	}
	k.enforce, k.admin, k.reserveAdmin = nil, nil, nil
}

func (k *kafkaLink) get() (*kafkaadmin.Enforce, error) {
	if k == nil {
		return nil, errNoBroker
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.enforce == nil {
		return nil, errNoBroker
	}
	return k.enforce, nil
}

// ServeHTTP answers admission questions once connected.
func (k *kafkaLink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var h http.Handler
	if k != nil {
		k.mu.Lock()
		h = k.reserveH
		k.mu.Unlock()
	}
	if h == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":"kafka cluster not reachable yet"}` + "\n"))
		return
	}
	h.ServeHTTP(w, r)
}

// The enforcer.Admin methods delegate to the connection, or fail with
// errNoBroker without one.

func (k *kafkaLink) Offsets(ctx context.Context, parts []enforcer.TopicPartition) (map[enforcer.TopicPartition]enforcer.Offsets, error) {
	e, err := k.get()
	if err != nil {
		return nil, err
	}
	return e.Offsets(ctx, parts)
}

func (k *kafkaLink) DeleteRecords(ctx context.Context, topic string, offsets map[int32]int64) (map[int32]error, error) {
	e, err := k.get()
	if err != nil {
		return nil, err
	}
	return e.DeleteRecords(ctx, topic, offsets)
}

func (k *kafkaLink) TopicACLs(ctx context.Context) ([]enforcer.ACL, error) {
	e, err := k.get()
	if err != nil {
		return nil, err
	}
	return e.TopicACLs(ctx)
}

func (k *kafkaLink) CreateACLs(ctx context.Context, acls []enforcer.ACL) error {
	e, err := k.get()
	if err != nil {
		return err
	}
	return e.CreateACLs(ctx, acls)
}

func (k *kafkaLink) DeleteACLs(ctx context.Context, acls []enforcer.ACL) error {
	e, err := k.get()
	if err != nil {
		return err
	}
	return e.DeleteACLs(ctx, acls)
}

func (k *kafkaLink) DefaultProducerQuota(ctx context.Context) (int64, error) {
	e, err := k.get()
	if err != nil {
		return 0, err
	}
	return e.DefaultProducerQuota(ctx)
}

func (k *kafkaLink) SetDefaultProducerQuota(ctx context.Context, rate int64) error {
	e, err := k.get()
	if err != nil {
		return err
	}
	return e.SetDefaultProducerQuota(ctx, rate)
}

func (k *kafkaLink) RemoveDefaultProducerQuota(ctx context.Context) error {
	e, err := k.get()
	if err != nil {
		return err
	}
	return e.RemoveDefaultProducerQuota(ctx)
}

func (k *kafkaLink) LoadOwnership(ctx context.Context) (map[int32]enforcer.Ownership, error) {
	e, err := k.get()
	if err != nil {
		return nil, err
	}
	return e.LoadOwnership(ctx)
}

func (k *kafkaLink) StoreOwnership(ctx context.Context, o enforcer.Ownership) error {
	e, err := k.get()
	if err != nil {
		return err
	}
	return e.StoreOwnership(ctx, o)
}

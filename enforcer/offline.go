package enforcer

import "github.com/kafka-disk-guard/kafka-disk-guard/agent"

// OfflineLogDirs returns the guard's log dirs that the guarded broker
// reports offline (DescribeLogDirs: KAFKA_STORAGE_ERROR; identity reason
// broker_log_dir_offline), by path, with the broker's word, as of the last
// pass; nil before the first pass or without a cluster. Safe for
// concurrent use: the agent's configs carry it into the classification
// (agent.ConfigSet.OfflineLogDirs: Kafka's retention does not run there).
func (e *Enforcer) OfflineLogDirs() map[string]string {
	if m := e.offline.Load(); m != nil {
		return *m
	}
	return nil
}

// publishOffline stores the offline log dirs of ids for OfflineLogDirs.
func (e *Enforcer) publishOffline(ids map[string]agent.LogDirIdentity) {
	var m map[string]string
	for path, id := range ids {
		if id.Reason == agent.IdentityBrokerOffline {
			if m == nil {
				m = map[string]string{}
			}
			m[path] = id.Detail
		}
	}
	e.offline.Store(&m)
}

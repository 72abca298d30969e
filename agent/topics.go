package agent

import "strings"

// Two definitions of an internal topic, each for its own use.

// KafkaInternalTopics lists, sorted, the topics Apache Kafka creates for
// itself: consumer group offsets, transactions, share group state and the
// KRaft metadata log. Refusing to create them breaks the cluster, so
// admission always lets them through (reserve.Check, and the broker-side
// plugin, which reads this list from a resource generated from it).
func KafkaInternalTopics() []string {
	return []string{"__cluster_metadata", "__consumer_offsets", "__share_group_state", "__transaction_state"}
}

// IsKafkaInternalTopic reports whether topic is one of KafkaInternalTopics.
func IsKafkaInternalTopic(topic string) bool {
	switch topic {
	case "__cluster_metadata", "__consumer_offsets", "__share_group_state", "__transaction_state":
		return true
	}
	return false
}

// InternalTopicPrefix marks internal topics by convention: Kafka's own,
// the guard's ownership topic and other tools' bookkeeping topics start
// with it.
const InternalTopicPrefix = "__"

// HasInternalPrefix reports whether topic is internal by convention (its
// name starts with InternalTopicPrefix). The enforcer never purges nor
// write-protects such a topic: Kafka's own are compact-only or not
// reachable through the admin API, and the others are bookkeeping that
// their owners need in order to work (the guard's ownership records
// among them).
func HasInternalPrefix(topic string) bool {
	return strings.HasPrefix(topic, InternalTopicPrefix)
}

package enforcer

import (
	"maps"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// ProtectionError is a problem with write protection: the
// write_protection_error metric's reason label.
type ProtectionError string

// Protection errors (spec R8.2): protection that is wanted but could not
// be put in place, or whose ownership could not be recorded or lifted.
const (
	// ErrorNoAuthorizer: strategy acl, and the brokers run without an
	// authorizer (SECURITY_DISABLED).
	ErrorNoAuthorizer ProtectionError = "no_authorizer"
	// ErrorCreateFailed: CreateAcls or AlterClientQuotas failed.
	ErrorCreateFailed ProtectionError = "create_failed"
	// ErrorOperatorQuota: strategy quota, and an operator's default client
	// quota is in place, which the guard never touches.
	ErrorOperatorQuota ProtectionError = "operator_quota"
	// ErrorNotInPlace: protection wanted for longer than an interval, and
	// bindings (or the quota) of it still not read back from the cluster.
	ErrorNotInPlace ProtectionError = "not_in_place"
	// ErrorRecordFailed: this agent's ownership record could not be
	// written (protection is applied all the same; lifting waits for it).
	ErrorRecordFailed ProtectionError = "record_failed"
	// ErrorLiftFailed: lifting (this agent's own, or an expired peer's)
	// failed.
	ErrorLiftFailed ProtectionError = "lift_failed"
	// ErrorExemptionImpossible: an exempt principal could not be left out
	// on a topic (an operator ACL allows User:* to write): it is denied
	// there too.
	ErrorExemptionImpossible ProtectionError = "exemption_impossible"
	// ErrorLocalRetentionFailed: lowering a tiered topic's
	// local.retention.bytes failed (spec R7.4): no write protection is
	// involved, so it is not create_failed.
	ErrorLocalRetentionFailed ProtectionError = "local_retention_failed"
)

func protectionErrors() []ProtectionError {
	return []ProtectionError{ErrorNoAuthorizer, ErrorCreateFailed, ErrorOperatorQuota, ErrorNotInPlace, ErrorRecordFailed, ErrorLiftFailed,
		ErrorExemptionImpossible, ErrorLocalRetentionFailed}
}

// protectionMetrics are the write-protection gauges: what this agent
// wants and what is in place for its log dirs, its problems, and the
// cluster-wide view from every agent's record.
type protectionMetrics struct {
	active      *prometheus.GaugeVec
	wanted      *prometheus.GaugeVec
	errors      *prometheus.GaugeVec
	cluster     *prometheus.GaugeVec
	topics      *prometheus.GaugeVec
	leaseAge    *prometheus.GaugeVec
	lease       *prometheus.GaugeVec
	recordBytes prometheus.Gauge
	// ledgerLost, undecodable: the ownership topic's health (spec R8.7).
	ledgerLost  prometheus.Gauge
	undecodable prometheus.Gauge
	// standby: another instance acts for this broker (spec R8.8).
	standby prometheus.Gauge
	brokers map[int32]bool // broker_id series exported
}

func newProtectionMetrics(reg prometheus.Registerer) (*protectionMetrics, error) {
	const ns = "kafka_disk_guard"
	m := &protectionMetrics{
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "write_protection_active",
			Help: "1 while write protection this agent owns for the log dir is in place on the cluster (ACLs or quota read back)."}, []string{"log_dir", "strategy"}),
		wanted: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "write_protection_wanted",
			Help: "1 while the enforcer wants the log dir write-protected (0 in observe mode)."}, []string{"log_dir", "strategy"}),
		errors: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "write_protection_error",
			Help: "1 while write protection has this problem (no_authorizer, create_failed, operator_quota, not_in_place, record_failed, lift_failed, exemption_impossible, local_retention_failed)."}, []string{"reason"}),
		cluster: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "cluster_write_protection",
			Help: "1 while protection the agent of broker_id owns (its record, not lifted) is in place on the cluster, as this agent reads it."}, []string{"broker_id"}),
		topics: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "cluster_protected_topics",
			Help: "Topics the agent of broker_id protects with ACLs (its record, not lifted)."}, []string{"broker_id"}),
		leaseAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "cluster_protection_lease_age_seconds",
			Help: "Time since the agent of broker_id last renewed the lease of its protection (its record's clock)."}, []string{"broker_id"}),
		lease: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "cluster_protection_lease_seconds",
			Help: "Length of the lease of the agent of broker_id: protection unrenewed this long is lifted by a peer."}, []string{"broker_id"}),
		recordBytes: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "protection_record_bytes",
			Help: "Size of this agent's ownership record as last written (gzipped JSON when large)."}),
		ledgerLost: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "protection_ledger_lost",
			Help: "1 while the ownership topic is missing, has more than one partition, or is not compacted: nothing is claimed or released on its word."}),
		undecodable: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "protection_ledger_undecodable_records",
			Help: "Values of the ownership topic skipped at the last read because they do not decode (garbage, a newer version): their brokers' claims are untouchable."}),
		standby: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: "protection_standby",
			Help: "1 while another agent instance for this broker holds a live lease: this one changes nothing until it expires."}),
		brokers: map[int32]bool{},
	}
	for _, c := range []prometheus.Collector{m.active, m.wanted, m.errors, m.cluster, m.topics, m.leaseAge, m.lease, m.recordBytes, m.ledgerLost, m.undecodable, m.standby} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	for _, r := range protectionErrors() {
		m.errors.WithLabelValues(string(r)).Set(0)
	}
	return m, nil
}

func gauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// setErrors sets every reason's gauge.
func (m *protectionMetrics) setErrors(errs map[ProtectionError]bool) {
	for _, r := range protectionErrors() {
		m.errors.WithLabelValues(string(r)).Set(gauge(errs[r]))
	}
}

// clusterEntry is one broker's protection in the cluster-wide view.
type clusterEntry struct {
	inPlace  bool
	topics   int
	renewed  float64 // lease age in seconds; < 0: no lease
	leaseSec float64
}

// setCluster sets the cluster-wide view; brokers without a record lose
// their series.
func (m *protectionMetrics) setCluster(view map[int32]clusterEntry) {
	for id := range m.brokers {
		if _, ok := view[id]; !ok {
			l := strconv.Itoa(int(id))
			m.cluster.DeleteLabelValues(l)
			m.topics.DeleteLabelValues(l)
			m.leaseAge.DeleteLabelValues(l)
			m.lease.DeleteLabelValues(l)
			delete(m.brokers, id)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(view)) {
		v, l := view[id], strconv.Itoa(int(id))
		m.brokers[id] = true
		m.cluster.WithLabelValues(l).Set(gauge(v.inPlace))
		m.topics.WithLabelValues(l).Set(float64(v.topics))
		if v.renewed >= 0 {
			m.leaseAge.WithLabelValues(l).Set(v.renewed)
			m.lease.WithLabelValues(l).Set(v.leaseSec)
		} else {
			m.leaseAge.DeleteLabelValues(l)
			m.lease.DeleteLabelValues(l)
		}
	}
}

package enforcer

import (
	"slices"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

// The protection ledger (records, claims, leases, the release protocol,
// status and lift) is its own package, enforcer/ledger. The enforcer's
// code names its types and constants unqualified: these are the same
// types, not copies.

// Ledger types.
type (
	ACL           = ledger.ACL
	Shape         = ledger.Shape
	AllowEveryone = ledger.AllowEveryone
	Record        = ledger.Record
	Records       = ledger.Records
	Owned         = ledger.Owned
	Lift          = ledger.Lift
	Why           = ledger.Why
	Suppression   = ledger.Suppression
	PurgeBucket   = ledger.PurgeBucket
	TopicReplicas = ledger.TopicReplicas
)

// ACL fields the guard uses.
const (
	PatternLiteral  = ledger.PatternLiteral
	PatternPrefixed = ledger.PatternPrefixed
	AnyPrincipal    = ledger.AnyPrincipal
	AnyHost         = ledger.AnyHost
	OpAll           = ledger.OpAll
	OpWrite         = ledger.OpWrite
	OpRead          = ledger.OpRead
	OpDescribe      = ledger.OpDescribe
	OpCreate        = ledger.OpCreate
	OpDelete        = ledger.OpDelete
	OpAlter         = ledger.OpAlter
	OpAlterConfigs  = ledger.OpAlterConfigs
	OpDescribeConfs = ledger.OpDescribeConfs
	PermAllow       = ledger.PermAllow
	PermDeny        = ledger.PermDeny
)

// What the brokers' allow.everyone.if.no.acl.found is.
const (
	AllowEveryoneUnknown = ledger.AllowEveryoneUnknown
	AllowEveryoneFalse   = ledger.AllowEveryoneFalse
	AllowEveryoneTrue    = ledger.AllowEveryoneTrue
)

// Kinds of claims and lifts.
const (
	OwnedACL            = ledger.OwnedACL
	OwnedQuota          = ledger.OwnedQuota
	OwnedTopicConfig    = ledger.OwnedTopicConfig
	DefaultClientEntity = ledger.DefaultClientEntity
	LiftOperator        = ledger.LiftOperator
	LiftLeaseExpired    = ledger.LiftLeaseExpired
	LiftBrokerGone      = ledger.LiftBrokerGone
)

// Ledger errors (match them with errors.Is).
var (
	ErrLedgerLost    = ledger.ErrLedgerLost
	ErrLedgerMissing = ledger.ErrLedgerMissing
	ErrConfigRefused = ledger.ErrConfigRefused
)

func unionStrings(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

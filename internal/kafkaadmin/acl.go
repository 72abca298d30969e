package kafkaadmin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/IBM/sarama"

	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer"
	"github.com/kafka-disk-guard/kafka-disk-guard/enforcer/ledger"
)

var aclOps = map[string]sarama.AclOperation{
	"ALL": sarama.AclOperationAll, "READ": sarama.AclOperationRead, "WRITE": sarama.AclOperationWrite,
	"CREATE": sarama.AclOperationCreate, "DELETE": sarama.AclOperationDelete, "ALTER": sarama.AclOperationAlter,
	"DESCRIBE": sarama.AclOperationDescribe, "DESCRIBE_CONFIGS": sarama.AclOperationDescribeConfigs,
	"ALTER_CONFIGS": sarama.AclOperationAlterConfigs,
}

func opName(op sarama.AclOperation) string {
	for n, o := range aclOps {
		if o == op {
			return n
		}
	}
	return strings.ToUpper(op.String())
}

func permName(p sarama.AclPermissionType) string {
	if p == sarama.AclPermissionDeny {
		return ledger.PermDeny
	}
	if p == sarama.AclPermissionAllow {
		return ledger.PermAllow
	}
	return strings.ToUpper(p.String())
}

func toSarama(a ledger.ACL) (sarama.Resource, sarama.Acl, error) {
	op, ok := aclOps[a.Operation]
	if !ok {
		return sarama.Resource{}, sarama.Acl{}, fmt.Errorf("acl operation %q unknown", a.Operation)
	}
	perm := sarama.AclPermissionAllow
	if a.Permission == ledger.PermDeny {
		perm = sarama.AclPermissionDeny
	}
	pattern := sarama.AclPatternLiteral
	if a.Pattern == ledger.PatternPrefixed {
		pattern = sarama.AclPatternPrefixed
	}
	return sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: a.Topic, ResourcePatternType: pattern},
		sarama.Acl{Principal: a.Principal, Host: a.Host, Operation: op, PermissionType: perm}, nil
}

// TopicACLs lists every ACL on topic resources, any pattern type.
func (e *Enforce) TopicACLs(ctx context.Context) ([]ledger.ACL, error) {
	c, err := e.src.conn()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var res []sarama.ResourceAcls
	err = c.viaController(func() error {
		var err error
		res, err = c.admin.ListAcls(sarama.AclFilter{
			Version:                   1,
			ResourceType:              sarama.AclResourceTopic,
			ResourcePatternTypeFilter: sarama.AclPatternAny,
			Operation:                 sarama.AclOperationAny,
			PermissionType:            sarama.AclPermissionAny,
		})
		return err
	})
	if errors.Is(err, sarama.ErrSecurityDisabled) {
		return nil, fmt.Errorf("describe acls: %w (%w)", enforcer.ErrNoAuthorizer, err)
	}
	if err != nil {
		return nil, fmt.Errorf("describe acls: %w", err)
	}
	var out []ledger.ACL
	for _, r := range res {
		pattern := ledger.PatternLiteral
		switch r.ResourcePatternType {
		case sarama.AclPatternPrefixed:
			pattern = ledger.PatternPrefixed
		case sarama.AclPatternLiteral:
		default:
			pattern = strings.ToLower(r.ResourcePatternType.String())
		}
		for _, a := range r.Acls {
			out = append(out, ledger.ACL{
				Topic: r.ResourceName, Pattern: pattern, Principal: a.Principal, Host: a.Host,
				Operation: opName(a.Operation), Permission: permName(a.PermissionType),
			})
		}
	}
	return out, nil
}

// aclBatch is how many bindings one CreateAcls or DeleteAcls request
// names (protecting 10,000 topics takes tens of thousands).
const aclBatch = 1000

// CreateACLs creates the bindings (creating an existing one is a no-op in
// Kafka) and checks each creation's result. Without an authorizer it
// answers enforcer.ErrNoAuthorizer.
func (e *Enforce) CreateACLs(ctx context.Context, acls []ledger.ACL) error {
	return e.inBatches(ctx, acls, e.createACLs)
}

// inBatches sends the bindings aclBatch at a time; without an authorizer
// it stops at the first batch.
func (e *Enforce) inBatches(ctx context.Context, acls []ledger.ACL, send func(*conn, []ledger.ACL) error) error {
	c, err := e.src.conn()
	if err != nil {
		return err
	}
	var errs []error
	for start := 0; start < len(acls); start += aclBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := send(c, acls[start:min(start+aclBatch, len(acls))]); err != nil {
			errs = append(errs, err)
			if errors.Is(err, enforcer.ErrNoAuthorizer) {
				break
			}
		}
	}
	return errors.Join(errs...)
}

func (e *Enforce) createACLs(c *conn, acls []ledger.ACL) error {
	req := &sarama.CreateAclsRequest{Version: 1}
	if c.client.Config().Version.IsAtLeast(sarama.V2_5_0_0) {
		req.Version = 2
	}
	for _, a := range acls {
		r, acl, err := toSarama(a)
		if err != nil {
			return err
		}
		req.AclCreations = append(req.AclCreations, &sarama.AclCreation{Resource: r, Acl: acl})
	}
	var rsp *sarama.CreateAclsResponse
	err := c.viaController(func() error {
		b, err := c.admin.Controller()
		if err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		rsp, err = b.CreateAcls(req)
		return err
	})
	if err != nil {
		return fmt.Errorf("create acls: %w", err)
	}
	if len(rsp.AclCreationResponses) != len(acls) {
		return fmt.Errorf("create acls: %d results for %d bindings", len(rsp.AclCreationResponses), len(acls))
	}
	var errs []error
	for i, r := range rsp.AclCreationResponses {
		switch {
		case errors.Is(r.Err, sarama.ErrSecurityDisabled):
			return fmt.Errorf("create acls: %w (%w)", enforcer.ErrNoAuthorizer, r.Err)
		case !errors.Is(r.Err, sarama.ErrNoError):
			errs = append(errs, fmt.Errorf("create acl %s %s %s on topic %s: %w%s", acls[i].Permission, acls[i].Operation, acls[i].Principal, acls[i].Topic, r.Err, msg(r.ErrMsg)))
		}
	}
	return errors.Join(errs...)
}

func msg(s *string) string {
	if s == nil || *s == "" {
		return ""
	}
	return ": " + *s
}

// DeleteACLs deletes exactly the bindings given: one filter per binding,
// fully specified (literal pattern, principal, host, operation,
// permission), so no other ACL can match.
func (e *Enforce) DeleteACLs(ctx context.Context, acls []ledger.ACL) error {
	return e.inBatches(ctx, acls, e.deleteACLs)
}

func (e *Enforce) deleteACLs(c *conn, acls []ledger.ACL) error {
	req := &sarama.DeleteAclsRequest{Version: 1}
	if c.client.Config().Version.IsAtLeast(sarama.V2_5_0_0) {
		req.Version = 2
	}
	for _, a := range acls {
		r, acl, err := toSarama(a)
		if err != nil {
			return err
		}
		name, principal, host := r.ResourceName, acl.Principal, acl.Host
		req.Filters = append(req.Filters, &sarama.AclFilter{
			Version: int(req.Version), ResourceType: r.ResourceType, ResourceName: &name,
			ResourcePatternTypeFilter: r.ResourcePatternType, Principal: &principal, Host: &host,
			Operation: acl.Operation, PermissionType: acl.PermissionType,
		})
	}
	var rsp *sarama.DeleteAclsResponse
	err := c.viaController(func() error {
		b, err := c.admin.Controller()
		if err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		rsp, err = b.DeleteAcls(req)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete acls: %w", err)
	}
	if len(rsp.FilterResponses) != len(acls) {
		return fmt.Errorf("delete acls: %d results for %d bindings", len(rsp.FilterResponses), len(acls))
	}
	var errs []error
	for i, fr := range rsp.FilterResponses {
		if !errors.Is(fr.Err, sarama.ErrNoError) {
			errs = append(errs, fmt.Errorf("delete acl %s %s %s on topic %s: %w%s", acls[i].Permission, acls[i].Operation, acls[i].Principal, acls[i].Topic, fr.Err, msg(fr.ErrMsg)))
		}
		for _, m := range fr.MatchingAcls {
			if !errors.Is(m.Err, sarama.ErrNoError) {
				errs = append(errs, fmt.Errorf("delete acl on topic %s: %w%s", m.ResourceName, m.Err, msg(m.ErrMsg)))
			}
		}
	}
	return errors.Join(errs...)
}

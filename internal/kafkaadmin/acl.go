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

// inBatches sends the bindings at most aclBatch at a time (aclBatches);
// without an authorizer it stops at the first batch.
func (e *Enforce) inBatches(ctx context.Context, acls []ledger.ACL, send func(*conn, []ledger.ACL) error) error {
	c, err := e.src.conn()
	if err != nil {
		return err
	}
	var errs []error
	for _, batch := range aclBatches(acls, aclBatch) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := send(c, batch); err != nil {
			errs = append(errs, err)
			if errors.Is(err, enforcer.ErrNoAuthorizer) {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// aclBatches splits the bindings, in their order, into requests of at
// most limit bindings, cut only where the topic changes: the bindings of
// one topic (the guard's shape, listed together) go in one request, so no
// topic is left for a round trip with part of its shape created or
// deleted. A topic with more than limit bindings in a row is cut at limit.
func aclBatches(acls []ledger.ACL, limit int) [][]ledger.ACL {
	var out [][]ledger.ACL
	start, cut := 0, 0 // cut: where the last run of one topic began
	for i := range acls {
		if i > 0 && acls[i].Topic != acls[i-1].Topic {
			cut = i
		}
		if i-start < limit {
			continue
		}
		if cut <= start { // one topic fills the request
			cut = i
		}
		out = append(out, acls[start:cut])
		start = cut
	}
	if start < len(acls) {
		out = append(out, acls[start:])
	}
	return out
}

func (e *Enforce) createACLs(c *conn, acls []ledger.ACL) error {
	req := &sarama.CreateAclsRequest{Version: aclRequestVersion(c)}
	for _, a := range acls {
		r, acl, err := toSarama(a)
		if err != nil {
			return err
		}
		req.AclCreations = append(req.AclCreations, &sarama.AclCreation{Resource: r, Acl: acl})
	}
	rsp, err := onController(c, "create acls", func(b *sarama.Broker) (*sarama.CreateAclsResponse, error) { return b.CreateAcls(req) })
	if err != nil {
		return err
	}
	return checkBindings("create", acls, len(rsp.AclCreationResponses), func(i int) (sarama.KError, *string) {
		return rsp.AclCreationResponses[i].Err, rsp.AclCreationResponses[i].ErrMsg
	})
}

// aclRequestVersion is the CreateAcls and DeleteAcls version to send: 2
// from Kafka 2.5, else 1.
func aclRequestVersion(c *conn) int16 {
	if c.client.Config().Version.IsAtLeast(sarama.V2_5_0_0) {
		return 2
	}
	return 1
}

// onController sends a request to the controller (viaController: asked
// again when the connection fails); what names it in errors.
func onController[R any](c *conn, what string, send func(*sarama.Broker) (R, error)) (R, error) {
	var rsp R
	err := c.viaController(func() error {
		b, err := c.admin.Controller()
		if err != nil {
			return fmt.Errorf("controller: %w", err)
		}
		rsp, err = send(b)
		return err
	})
	if err != nil {
		return rsp, fmt.Errorf("%s: %w", what, err)
	}
	return rsp, nil
}

// checkBindings checks a CreateAcls or DeleteAcls response (op: create,
// delete): n results, one per binding in order, result(i) the error code
// and message of binding i; SECURITY_DISABLED is enforcer.ErrNoAuthorizer;
// every other error code is returned with its binding.
func checkBindings(op string, acls []ledger.ACL, n int, result func(i int) (sarama.KError, *string)) error {
	if n != len(acls) {
		return fmt.Errorf("%s acls: %d results for %d bindings", op, n, len(acls))
	}
	var errs []error
	for i, a := range acls {
		code, text := result(i)
		switch {
		case errors.Is(code, sarama.ErrSecurityDisabled):
			return fmt.Errorf("%s acls: %w (%w)", op, enforcer.ErrNoAuthorizer, code)
		case !errors.Is(code, sarama.ErrNoError):
			errs = append(errs, fmt.Errorf("%s acl %s %s %s on topic %s: %w%s", op, a.Permission, a.Operation, a.Principal, a.Topic, code, msg(text)))
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
	req := &sarama.DeleteAclsRequest{Version: int(aclRequestVersion(c))}
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
	rsp, err := onController(c, "delete acls", func(b *sarama.Broker) (*sarama.DeleteAclsResponse, error) { return b.DeleteAcls(req) })
	if err != nil {
		return err
	}
	errs := []error{checkBindings("delete", acls, len(rsp.FilterResponses), func(i int) (sarama.KError, *string) {
		return rsp.FilterResponses[i].Err, rsp.FilterResponses[i].ErrMsg
	})}
	for _, fr := range rsp.FilterResponses {
		for _, m := range fr.MatchingAcls {
			if !errors.Is(m.Err, sarama.ErrNoError) {
				errs = append(errs, fmt.Errorf("delete acl on topic %s: %w%s", m.ResourceName, m.Err, msg(m.ErrMsg)))
			}
		}
	}
	return errors.Join(errs...)
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decodeStrict decodes a YAML document into out (a pointer to a struct)
// and refuses what does not fit it, naming the YAML path: an unknown key
// (with the keys allowed there), or a value of the wrong type (with the
// type wanted). Go type names never reach the message.
func decodeStrict(data []byte, out any) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	if len(doc.Content) == 0 {
		return nil // an empty file: every default
	}
	var errs []error
	walkYAML(doc.Content[0], reflect.TypeOf(out).Elem(), "", &errs)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(out); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

var durationType = reflect.TypeOf(time.Duration(0))

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// walkYAML checks node n against type t at path.
func walkYAML(n *yaml.Node, t reflect.Type, path string, errs *[]error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // unset: the default
	}
	name := path
	if name == "" {
		name = "the top level"
	}
	switch {
	case t.Kind() == reflect.Struct && t != reflect.TypeOf(time.Time{}):
		if n.Kind != yaml.MappingNode {
			*errs = append(*errs, fmt.Errorf("line %d: %s: want a mapping of %s", n.Line, name, strings.Join(yamlKeys(t), ", ")))
			return
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			if !ok {
				*errs = append(*errs, fmt.Errorf("line %d: %s: unknown key (allowed under %s: %s)", k.Line, join(path, k.Value), name, strings.Join(yamlKeys(t), ", ")))
				continue
			}
			walkYAML(v, ft, join(path, k.Value), errs)
		}
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			*errs = append(*errs, fmt.Errorf("line %d: %s: want a list", n.Line, name))
			return
		}
		for i, e := range n.Content {
			walkYAML(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i), errs)
		}
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			*errs = append(*errs, fmt.Errorf("line %d: %s: want a mapping", n.Line, name))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			walkYAML(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), errs)
		}
	default:
		if n.Kind != yaml.ScalarNode {
			*errs = append(*errs, fmt.Errorf("line %d: %s: want %s", n.Line, name, describeType(t)))
			return
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			*errs = append(*errs, fmt.Errorf("line %d: %s: %q is not %s", n.Line, name, n.Value, describeType(t)))
		}
	}
}

func describeType(t reflect.Type) string {
	switch {
	case t == durationType:
		return "a duration (such as 250ms, 30s, 5m)"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return "an integer"
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr:
		return "a non-negative integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.String:
		return "a string"
	}
	return "a value of another kind"
}

// yamlFields maps a struct's YAML keys to their types, inline fields
// included.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func yamlKeys(t reflect.Type) []string {
	var keys []string
	for k := range yamlFields(t) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

package ledger

import "encoding/json"

// The record's encoding keeps one "owned" list for both kinds of claims
// (format version 2): a guard of the previous release reads the config
// claims of this one, and the other way round, during a rolling upgrade.

// ownedJSON is one entry of the "owned" list: an Owned (acl, quota) or a
// ConfigClaim (topic_config).
type ownedJSON struct {
	Kind      string   `json:"kind"`
	Shape     *Shape   `json:"shape,omitempty"`
	Topics    []string `json:"topics,omitempty"`
	Entity    string   `json:"entity,omitempty"`
	Topic     string   `json:"topic,omitempty"`
	Key       string   `json:"key,omitempty"`
	Value     string   `json:"value,omitempty"`
	Orig      *string  `json:"original,omitempty"`
	Prev      *string  `json:"prev,omitempty"`
	Releasing bool     `json:"releasing,omitempty"`
}

// recordFields is Record without its methods (no MarshalJSON recursion).
type recordFields Record

type recordJSON struct {
	recordFields
	Owned []ownedJSON `json:"owned,omitempty"`
}

// MarshalJSON encodes the record with its claims in one "owned" list.
func (r Record) MarshalJSON() ([]byte, error) {
	w := recordJSON{recordFields: recordFields(r)}
	for _, o := range r.Owned {
		w.Owned = append(w.Owned, ownedJSON{Kind: o.Kind, Shape: o.Shape, Topics: o.Topics, Entity: o.Entity, Key: o.Key,
			Value: o.Value, Releasing: o.Releasing})
	}
	for _, c := range r.Configs {
		w.Owned = append(w.Owned, ownedJSON{Kind: OwnedTopicConfig, Topic: c.Topic, Key: c.Key, Value: c.Value, Orig: c.Orig,
			Prev: c.Prev, Releasing: c.Releasing})
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes a record, splitting the "owned" list by kind.
func (r *Record) UnmarshalJSON(data []byte) error {
	var w recordJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = Record(w.recordFields)
	r.Owned, r.Configs = nil, nil
	for _, o := range w.Owned {
		if o.Kind == OwnedTopicConfig {
			r.Configs = append(r.Configs, ConfigClaim{Topic: o.Topic, Key: o.Key, Value: o.Value, Orig: o.Orig, Prev: o.Prev,
				Releasing: o.Releasing})
			continue
		}
		r.Owned = append(r.Owned, Owned{Kind: o.Kind, Shape: o.Shape, Topics: o.Topics, Entity: o.Entity, Key: o.Key,
			Value: o.Value, Releasing: o.Releasing})
	}
	return nil
}

package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v4"

	"tollgate/plans"
)

// Parse reads a document from YAML or JSON (JSON is YAML). An unknown
// field is an error naming it.
func Parse(data []byte) (*Document, error) {
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, plans.Invalid("document", "the configuration is not YAML or JSON: %v", err)
	}
	if v == nil {
		return &Document{}, nil
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, plans.Invalid("document", "the configuration cannot be read as JSON: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	var d Document
	if err := dec.Decode(&d); err != nil {
		return nil, decodeError(err)
	}
	return &d, nil
}

// decodeError names the field of a JSON decoding error.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return plans.Invalid(te.Field, "%s: expected %s, got %s", te.Field, te.Type, te.Value)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return plans.Invalid(strings.Trim(name, `"`), "unknown field %s", name)
	}
	return plans.Invalid("document", "%s", msg)
}

// JSON writes d as indented JSON: object keys in a fixed order (struct
// fields as declared, maps sorted), so the same state gives the same
// bytes.
func JSON(d *Document) ([]byte, error) {
	return json.MarshalIndent(d, "", "  ")
}

// YAML writes d as block-style YAML with JSON's key order, so the same
// state gives the same bytes.
func YAML(d *Document) ([]byte, error) {
	j, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return jsonToYAML(j)
}

// jsonToYAML re-encodes JSON as YAML, keeping key order (JSON is YAML, so
// decoding it into a yaml.Node keeps every key where it was).
func jsonToYAML(j []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(j, &n); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	blockStyle(&n)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// yaml11Bool are strings YAML 1.1 readers take for booleans: they stay
// quoted ("OFF" is a logging level, not false).
var yaml11Bool = map[string]bool{"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true}

// blockStyle turns the flow style JSON decodes into block style (empty
// collections stay {} and []), and plain scalars where YAML reads them
// back the same.
func blockStyle(n *yaml.Node) {
	if (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && len(n.Content) > 0 {
		n.Style = 0
	}
	if n.Kind == yaml.ScalarNode && n.Style == yaml.DoubleQuotedStyle && !yaml11Bool[strings.ToLower(n.Value)] {
		n.Style = 0 // the encoder quotes again where a plain scalar would change type
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
)

// loc is a location in a document: the keys from its root, as in
// {"paths", "/pets", "get", "x-amazon-apigateway-integration", "uri"}, a
// list index written "[0]" (index). Its String form names it in errors
// and warnings: "paths./pets.get.parameters[0]".
type loc []string

func (l loc) String() string {
	var b strings.Builder
	for i, k := range l {
		if i > 0 && !isIndex(k) {
			b.WriteByte('.')
		}
		b.WriteString(k)
	}
	return b.String()
}

// index is the loc element of list index i.
func index(i int) string { return "[" + strconv.Itoa(i) + "]" }

func isIndex(k string) bool { return strings.HasPrefix(k, "[") && strings.HasSuffix(k, "]") }

// at returns l followed by keys, never sharing l's backing array.
func (l loc) at(keys ...string) loc { return append(l[:len(l):len(l)], keys...) }

// warning is one thing an import skipped or changed, at its location.
type warning struct {
	at  loc
	msg string
}

// warnings is what an importer collects.
type warnings []warning

// add records a warning whose message starts with its location.
func (ws *warnings) add(at loc, format string, args ...any) {
	*ws = append(*ws, warning{at: at, msg: at.String() + ": " + fmt.Sprintf(format, args...)})
}

// inDocumentOrder returns the messages ordered by where their locations
// appear in data (the document they came from, JSON when isJSON); warnings
// at one place keep the order they were made in. data is read only when
// there are two or more warnings.
func (ws warnings) inDocumentOrder(data []byte, isJSON bool) []string {
	if len(ws) == 0 {
		return nil
	}
	type placed struct {
		pos []int
		msg string
	}
	out := make([]placed, len(ws))
	var root *yaml.Node
	if len(ws) > 1 && !isJSON {
		var n yaml.Node
		if yaml.Unmarshal(data, &n) == nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
			root = n.Content[0]
		}
	}
	for i, w := range ws {
		out[i].msg = w.msg
		if root != nil {
			out[i].pos = position(root, w.at)
		}
	}
	if len(ws) > 1 && isJSON {
		places := make([]loc, len(ws))
		for i, w := range ws {
			places[i] = w.at
		}
		for i, pos := range jsonPositions(data, places) {
			out[i].pos = pos
		}
	}
	slices.SortStableFunc(out, func(a, b placed) int { return slices.Compare(a.pos, b.pos) })
	msgs := make([]string, len(out))
	for i, p := range out {
		msgs[i] = p.msg
	}
	return msgs
}

// position returns the index of each key of at in its mapping (or of
// each sequence index), as far as at can be followed from n: a location
// sorts after the locations before it in the document and after its own
// ancestors.
func position(n *yaml.Node, at loc) []int {
	pos := make([]int, 0, len(at))
	for _, key := range at {
		for n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil {
			return pos
		}
		switch n.Kind {
		case yaml.MappingNode:
			i := slices.IndexFunc(mappingKeys(n), func(k *yaml.Node) bool { return k.Value == key })
			if i < 0 {
				return pos
			}
			pos, n = append(pos, i), n.Content[2*i+1]
		case yaml.SequenceNode:
			i, err := strconv.Atoi(strings.Trim(key, "[]"))
			if !isIndex(key) || err != nil || i < 0 || i >= len(n.Content) {
				return pos
			}
			pos, n = append(pos, i), n.Content[i]
		default:
			return pos
		}
	}
	return pos
}

// mappingKeys returns the key nodes of a mapping node.
func mappingKeys(n *yaml.Node) []*yaml.Node {
	keys := make([]*yaml.Node, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i])
	}
	return keys
}

// jsonPositions returns position's answer for each of places in the JSON
// document data. It reads only the objects and arrays on the way to a
// place, so a document is scanned a few times at most, never parsed whole.
func jsonPositions(data []byte, places []loc) [][]int {
	out := make([][]int, len(places))
	var walk func(raw json.RawMessage, depth int, which []int)
	walk = func(raw json.RawMessage, depth int, which []int) {
		want := map[string][]int{} // key at this depth → the places below it
		for _, i := range which {
			if len(places[i]) > depth {
				want[places[i][depth]] = append(want[places[i][depth]], i)
			}
		}
		if len(want) == 0 {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		tok, err := dec.Token()
		if err != nil {
			return
		}
		for n := 0; dec.More(); n++ {
			key := index(n)
			if tok == json.Delim('{') {
				k, err := dec.Token()
				if err != nil {
					return
				}
				key, _ = k.(string)
			}
			var value json.RawMessage
			if err := dec.Decode(&value); err != nil {
				return
			}
			for _, i := range want[key] {
				out[i] = append(out[i], n)
			}
			if below := want[key]; len(below) > 0 {
				walk(value, depth+1, below)
			}
		}
	}
	all := make([]int, len(places))
	for i := range all {
		all[i] = i
	}
	walk(data, 0, all)
	return out
}

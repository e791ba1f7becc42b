package config

import (
	"fmt"
	"math"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file reads a file's YAML as envoyproxy/ratelimit does with
// yaml.v2: first every mapping key is checked against one set of known
// keys (validateYamlKeys), then the document is decoded into its structs,
// where a value of the wrong type is an error and a known key at a level
// that has no such field is ignored. yaml.v3 is used for its line numbers;
// the places where yaml.v2 reads YAML 1.1 (y/yes/on as booleans) are kept.

// validKeys are envoyproxy/ratelimit's known keys, valid at any level.
var validKeys = map[string]bool{
	"domain":            true,
	"key":               true,
	"value":             true,
	"descriptors":       true,
	"rate_limit":        true,
	"unit":              true,
	"requests_per_unit": true,
	"unlimited":         true,
	"shadow_mode":       true,
	"quota_mode":        true,
	"name":              true,
	"replaces":          true,
	"detailed_metric":   true,
	"value_to_metric":   true,
	"share_threshold":   true,
}

// extensionKeys are cellserver's own keys, valid only in a rate_limit block:
// a file that uses them is not one envoyproxy/ratelimit accepts.
var extensionKeys = map[string]bool{
	"unit_multiplier": true,
	"algorithm":       true,
	"burst":           true,
}

// yamlRoot, yamlDescriptor and yamlRateLimit are a file as decoded, with
// the lines that errors name.
type yamlRoot struct {
	Domain      string
	DomainLine  int
	Descriptors []yamlDescriptor
}

type yamlDescriptor struct {
	Line           int
	Key, Value     string
	RateLimit      *yamlRateLimit
	Descriptors    []yamlDescriptor
	ShadowMode     bool
	QuotaMode      bool
	DetailedMetric bool
	ValueToMetric  bool
	ShareThreshold bool
}

type yamlRateLimit struct {
	Line            int
	RequestsPerUnit uint32
	Unit            string
	UnitLine        int
	Unlimited       bool
	Name            string
	Replaces        []yamlReplaces
	// cellserver's extensions; the *Set fields say whether the file gave them.
	UnitMultiplier    uint32
	UnitMultiplierSet bool
	Algorithm         string
	AlgorithmSet      bool
	Burst             uint32
	BurstSet          bool
}

type yamlReplaces struct {
	Line int
	Name string
}

// decodeFile reads data into a yamlRoot, or returns the file's first
// problem.
func decodeFile(file string, data []byte) (*yamlRoot, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(file, err)
	}
	root := &yamlRoot{}
	if len(doc.Content) == 0 {
		return root, nil // an empty file: no domain, reported by the caller
	}
	top := resolve(doc.Content[0])
	if isNull(top) {
		return root, nil
	}
	if top.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: top.Line, Problem: fmt.Sprintf(
			"error loading config file: cannot unmarshal %s into a mapping", describe(top))}
	}
	if err := validateKeys(file, top, false); err != nil {
		return nil, err
	}
	d := decoder{file: file}
	d.root(top, root)
	if d.err != nil {
		return nil, d.err
	}
	return root, nil
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// describe names a node in yaml.v2's words for type errors: "!!seq",
// "!!str `abc`".
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "!!seq"
	case yaml.MappingNode:
		return "!!map"
	}
	return fmt.Sprintf("%s `%s`", n.ShortTag(), n.Value)
}

// validateKeys is envoyproxy/ratelimit's validateYamlKeys: every key a
// string and known, every list a list of mappings, every leaf a string,
// an integer, a boolean or null. inRateLimit allows cellserver's keys.
func validateKeys(file string, m *yaml.Node, inRateLimit bool) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return &Error{File: file, Line: k.Line, Problem: fmt.Sprintf(
				"config error, key is not of type string: %v", nodeText(k))}
		}
		if !validKeys[k.Value] && !(inRateLimit && extensionKeys[k.Value]) {
			problem := fmt.Sprintf("config error, unknown key '%s'", k.Value)
			if extensionKeys[k.Value] {
				problem += " (cellserver takes it only in a rate_limit block)"
			}
			return &Error{File: file, Line: k.Line, Problem: problem}
		}
		switch v.Kind {
		case yaml.SequenceNode:
			for _, e := range v.Content {
				e = resolve(e)
				if e.Kind != yaml.MappingNode {
					return &Error{File: file, Line: e.Line, Problem: fmt.Sprintf(
						"config error, yaml file contains list of type other than map: %v", nodeText(e))}
				}
				if err := validateKeys(file, e, false); err != nil {
					return err
				}
			}
		case yaml.MappingNode:
			if err := validateKeys(file, v, k.Value == "rate_limit"); err != nil {
				return err
			}
		case yaml.ScalarNode:
			if !leafOK(v) {
				return &Error{File: file, Line: v.Line, Problem: "error checking config"}
			}
		}
	}
	return nil
}

// leafOK reports whether yaml.v2 would decode the scalar into one of the
// leaf types validateYamlKeys takes: string, int, bool or nil. A float, or
// an integer beyond int64, is none of them.
func leafOK(n *yaml.Node) bool {
	switch n.ShortTag() {
	case "!!str", "!!bool", "!!null", "!!timestamp":
		return true
	case "!!int":
		var i int64
		return n.Decode(&i) == nil
	}
	return false
}

// nodeText prints a node roughly as fmt prints yaml.v2's generic value.
func nodeText(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return n.Value
	}
	var parts []string
	for _, c := range n.Content {
		parts = append(parts, nodeText(resolve(c)))
	}
	if n.Kind == yaml.MappingNode {
		return "map[" + strings.Join(parts, " ") + "]"
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// decoder decodes validated nodes into the yaml* structs, keeping the
// first type error, as yaml.v2's Unmarshal reports type errors.
type decoder struct {
	file string
	err  error
}

func (d *decoder) typeError(n *yaml.Node, into string) {
	if d.err == nil {
		d.err = &Error{File: d.file, Line: n.Line, Problem: fmt.Sprintf(
			"error loading config file: cannot unmarshal %s into %s", describe(n), into)}
	}
}

// fields calls f for each key and value of mapping m, the last of
// repeated keys winning as in yaml.v2.
func fields(m *yaml.Node, f func(key string, k, v *yaml.Node)) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		f(k.Value, k, v)
	}
}

func (d *decoder) root(m *yaml.Node, r *yamlRoot) {
	fields(m, func(key string, k, v *yaml.Node) {
		switch key {
		case "domain":
			r.Domain, r.DomainLine = d.str(v), k.Line
		case "descriptors":
			r.Descriptors = d.descriptors(v)
		}
	})
}

func (d *decoder) descriptors(n *yaml.Node) []yamlDescriptor {
	return decodeList(d, n, "a list of descriptors", func(e *yaml.Node) yamlDescriptor {
		ds := yamlDescriptor{Line: e.Line}
		fields(e, func(key string, k, v *yaml.Node) {
			switch key {
			case "key":
				ds.Key = d.str(v)
			case "value":
				ds.Value = d.str(v)
			case "rate_limit":
				ds.RateLimit = d.rateLimit(v)
			case "descriptors":
				ds.Descriptors = d.descriptors(v)
			case "shadow_mode":
				ds.ShadowMode = d.bool(v)
			case "quota_mode":
				ds.QuotaMode = d.bool(v)
			case "detailed_metric":
				ds.DetailedMetric = d.bool(v)
			case "value_to_metric":
				ds.ValueToMetric = d.bool(v)
			case "share_threshold":
				ds.ShareThreshold = d.bool(v)
			}
		})
		return ds
	})
}

// decodeList decodes a list, item by item (each a mapping: validateKeys
// checked), what naming it in a type error; null is no list.
func decodeList[T any](d *decoder, n *yaml.Node, what string, item func(e *yaml.Node) T) []T {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		d.typeError(n, what)
		return nil
	}
	out := make([]T, 0, len(n.Content))
	for _, e := range n.Content {
		out = append(out, item(resolve(e)))
	}
	return out
}

func (d *decoder) rateLimit(n *yaml.Node) *yamlRateLimit {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.typeError(n, "a rate_limit block")
		return nil
	}
	rl := &yamlRateLimit{Line: n.Line}
	fields(n, func(key string, k, v *yaml.Node) {
		switch key {
		case "requests_per_unit":
			rl.RequestsPerUnit = d.uint32(v)
		case "unit":
			rl.Unit, rl.UnitLine = d.str(v), v.Line
		case "unlimited":
			rl.Unlimited = d.bool(v)
		case "name":
			rl.Name = d.str(v)
		case "replaces":
			rl.Replaces = d.replaces(v)
		case "unit_multiplier":
			rl.UnitMultiplier, rl.UnitMultiplierSet = d.uint32(v), true
		case "algorithm":
			rl.Algorithm, rl.AlgorithmSet = d.str(v), true
		case "burst":
			rl.Burst, rl.BurstSet = d.uint32(v), true
		}
	})
	return rl
}

func (d *decoder) replaces(n *yaml.Node) []yamlReplaces {
	return decodeList(d, n, "a list of replaces", func(e *yaml.Node) yamlReplaces {
		r := yamlReplaces{Line: e.Line}
		fields(e, func(key string, k, v *yaml.Node) {
			if key == "name" {
				r.Name = d.str(v)
			}
		})
		return r
	})
}

// str decodes a string field: any scalar's text, as yaml.v2 does; null is "".
func (d *decoder) str(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		d.typeError(n, "string")
		return ""
	}
	if isNull(n) {
		return ""
	}
	return n.Value
}

// yaml11Bools are the plain scalars yaml.v2 reads as booleans beyond
// true and false.
var yaml11Bools = map[string]bool{
	"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

func (d *decoder) bool(n *yaml.Node) bool {
	if n.Kind == yaml.ScalarNode {
		switch {
		case isNull(n):
			return false
		case n.ShortTag() == "!!bool":
			var b bool
			if n.Decode(&b) == nil {
				return b
			}
		case n.Style == 0 && n.ShortTag() == "!!str":
			if b, ok := yaml11Bools[n.Value]; ok {
				return b
			}
		}
	}
	d.typeError(n, "bool")
	return false
}

func (d *decoder) uint32(n *yaml.Node) uint32 {
	if n.Kind == yaml.ScalarNode {
		if isNull(n) {
			return 0
		}
		if n.ShortTag() == "!!int" {
			var i int64
			if n.Decode(&i) == nil && i >= 0 && i <= math.MaxUint32 {
				return uint32(i)
			}
		}
	}
	d.typeError(n, "uint32")
	return 0
}

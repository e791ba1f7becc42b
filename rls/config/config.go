package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cellserver/cellserver/engine"
)

// Config is a loaded configuration: one or more domains, each from one
// file. It is immutable once loaded and safe for concurrent use.
type Config struct {
	domains map[string]*domain
}

// domain is one file's descriptors.
type domain struct {
	node
	file string
}

// node is one level of a domain's descriptor tree, as envoyproxy/ratelimit's
// rateLimitDescriptor: its children by composite key ("key" or
// "key_value", the form envoyproxy/ratelimit matches on), the composite
// keys that end in '*' in file order, and the descriptor's own settings.
type node struct {
	children        map[string]*node
	wildcards       []string
	limit           *Limit
	valueToMetric   bool
	shareThreshold  bool
	wildcardPattern string // the composite key, when share_threshold
}

// Domains lists the loaded domains, sorted.
func (c *Config) Domains() []string {
	out := make([]string, 0, len(c.domains))
	for name := range c.domains {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Parse reads one file's content; name is the file's name in errors.
func Parse(name string, data []byte) (*Config, error) {
	d, domainName, err := parseDomain(name, data)
	if err != nil {
		return nil, err
	}
	return &Config{domains: map[string]*domain{domainName: d}}, nil
}

// Load reads a file, or a directory whose *.yaml and *.yml files (not those
// whose names start with a dot, such as editors' temporary files) are each
// one domain, read in name order. Two files of one domain are an error
// naming both, as envoyproxy/ratelimit refuses them unless told to merge.
// A directory without such files loads as a configuration of no domains.
func Load(path string) (*Config, error) {
	files, err := configFiles(path)
	if err != nil {
		return nil, err
	}
	c := &Config{domains: make(map[string]*domain, len(files))}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		d, name, err := parseDomain(file, data)
		if err != nil {
			return nil, err
		}
		if prev, dup := c.domains[name]; dup {
			return nil, &Error{File: file, Problem: fmt.Sprintf(
				"duplicate domain '%s' in config file (already in %s)", name, prev.file)}
		}
		c.domains[name] = d
	}
	return c, nil
}

// configFiles lists the files Load reads for path.
func configFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries { // ReadDir sorts by name
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		if ext := filepath.Ext(name); ext != ".yaml" && ext != ".yml" {
			continue
		}
		file := filepath.Join(path, name)
		if st, err := os.Stat(file); err != nil || st.IsDir() {
			continue // a dangling link or a directory is not a file to read
		}
		files = append(files, file)
	}
	return files, nil
}

// parseDomain decodes and checks one file, as envoyproxy/ratelimit's
// loadConfig and loadDescriptors do, in their order, so that a file with
// several problems is refused for the same one.
func parseDomain(file string, data []byte) (*domain, string, error) {
	root, err := decodeFile(file, data)
	if err != nil {
		return nil, "", err
	}
	if root.Domain == "" {
		return nil, "", &Error{File: file, Line: root.DomainLine, Problem: "config file cannot have empty domain"}
	}
	d := &domain{node: node{children: map[string]*node{}}, file: file}
	if err := d.load(file, root.Domain+".", root.Descriptors); err != nil {
		return nil, "", err
	}
	return d, root.Domain, nil
}

// load adds descriptors below n; parentKey is n's path ("domain." at the
// top).
func (n *node) load(file, parentKey string, descriptors []yamlDescriptor) error {
	for _, ds := range descriptors {
		fail := func(line int, format string, args ...any) error {
			return &Error{File: file, Line: line, Problem: fmt.Sprintf(format, args...)}
		}
		if ds.Key == "" {
			return fail(ds.Line, "descriptor has empty key")
		}
		finalKey := ds.Key
		if ds.Value != "" {
			finalKey += "_" + ds.Value
		}
		fullKey := parentKey + finalKey
		if _, dup := n.children[finalKey]; dup {
			return fail(ds.Line, "duplicate descriptor composite key '%s'", fullKey)
		}
		var limit *Limit
		if ds.RateLimit != nil {
			var err error
			if limit, err = newLimit(file, fullKey, &ds); err != nil {
				return err
			}
		}
		wildcard := strings.HasSuffix(finalKey, "*")
		if ds.ShareThreshold && !wildcard {
			return fail(ds.Line, "share_threshold can only be used with wildcard values (ending with '*'), but found key '%s'", finalKey)
		}
		child := &node{
			children:       map[string]*node{},
			limit:          limit,
			valueToMetric:  ds.ValueToMetric,
			shareThreshold: ds.ShareThreshold,
		}
		if ds.ShareThreshold {
			child.wildcardPattern = finalKey
		}
		if wildcard {
			n.wildcards = append(n.wildcards, finalKey)
		}
		if err := child.load(file, fullKey+".", ds.Descriptors); err != nil {
			return err
		}
		n.children[finalKey] = child
	}
	return nil
}

// newLimit checks a descriptor's rate_limit block and builds its Limit.
func newLimit(file, fullKey string, ds *yamlDescriptor) (*Limit, error) {
	rl := ds.RateLimit
	fail := func(line int, format string, args ...any) (*Limit, error) {
		return nil, &Error{File: file, Line: line, Problem: fmt.Sprintf(format, args...)}
	}
	unit, validUnit := parseUnit(rl.Unit)
	if rl.Unlimited {
		if validUnit {
			return fail(rl.UnitLine, "should not specify rate limit unit when unlimited")
		}
		unit = UnitUnknown // envoyproxy/ratelimit takes any other text, and ignores it
	} else if !validUnit {
		return fail(rl.Line, "invalid rate limit unit '%s'", rl.Unit)
	}
	l := &Limit{
		FullKey:         fullKey,
		Name:            rl.Name,
		Unit:            unit,
		UnitMultiplier:  1,
		RequestsPerUnit: rl.RequestsPerUnit,
		Unlimited:       rl.Unlimited,
		ShadowMode:      ds.ShadowMode,
		QuotaMode:       ds.QuotaMode,
		DetailedMetric:  ds.DetailedMetric,
		Burst:           rl.Burst,
	}
	for _, r := range rl.Replaces {
		l.Replaces = append(l.Replaces, r.Name)
	}
	for _, r := range rl.Replaces {
		if r.Name == "" {
			return fail(r.Line, "should not have an empty replaces entry")
		}
		if r.Name == rl.Name {
			return fail(r.Line, "replaces should not contain name of same descriptor")
		}
	}
	// cellserver's extensions.
	if rl.Unlimited {
		for _, set := range []struct {
			name string
			set  bool
		}{{"unit_multiplier", rl.UnitMultiplierSet}, {"algorithm", rl.AlgorithmSet}, {"burst", rl.BurstSet}} {
			if set.set {
				return fail(rl.Line, "should not specify rate limit %s when unlimited", set.name)
			}
		}
		return l, nil
	}
	if rl.AlgorithmSet {
		a, ok := algorithmNames[strings.ToLower(rl.Algorithm)]
		if !ok {
			return fail(rl.Line, "invalid rate limit algorithm '%s' (fixed_window, sliding_window, sliding_counter or gcra)", rl.Algorithm)
		}
		l.Algorithm = a
	}
	if rl.BurstSet && l.Algorithm != GCRA {
		return fail(rl.Line, "rate limit burst is only for algorithm gcra")
	}
	if rl.UnitMultiplierSet {
		if rl.UnitMultiplier == 0 {
			return fail(rl.Line, "rate limit unit_multiplier must be at least 1")
		}
		l.UnitMultiplier = rl.UnitMultiplier
	}
	if time.Duration(l.UnitMultiplier) > engine.MaxWindow/unit.Duration() {
		return fail(rl.Line, "rate limit window of %d %s is longer than the engine's longest, 100 years", l.UnitMultiplier, unit)
	}
	if l.Algorithm == GCRA && l.Window()%time.Second != 0 {
		return fail(rl.Line, "rate limit window %v is not whole seconds, as gcra needs", l.Window())
	}
	return l, nil
}

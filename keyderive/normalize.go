package keyderive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Normalizer applies one tool's input normalization to canonical JSON, so
// that inputs a model phrases differently but that mean the same call get
// the same key:
//
//   - a property the schema declares and does not list in "required" is
//     dropped when its value is null (absent and null mean the same);
//   - a declared property that is absent (or was dropped as null) gets the
//     schema's "default", when it declares one other than null;
//   - a volatile property is dropped, whatever its value.
//
// Rules apply at the top level and inside nested objects whose schema
// declares "properties"; undeclared properties are kept. A Normalizer is
// immutable and safe for concurrent use.
type Normalizer struct {
	root *objectRule
	// extra is the size of all defaults, to size the output buffer.
	extra int
}

// objectRule holds the rules for the members of one object.
type objectRule struct {
	props map[string]*propRule
	// defaults are the members to add when absent, in canonical order.
	defaults []defaultMember
}

type propRule struct {
	declared bool // in the schema's "properties"
	required bool // in the schema's "required"
	volatile bool
	child    *objectRule // rules for an object value, or nil
}

type defaultMember struct {
	key    []byte    // canonical escaped name, without quotes
	value  []byte    // canonical default value
	prop   *propRule // the property's rules
	member []byte    // canonical `"name":value`, set by finish
}

// NewNormalizer builds the normalization of one tool from its input JSON
// Schema and its volatile property names.
//
// schemaJSON is the tool's input schema, or empty for none. Of JSON Schema
// it reads "type" (the top level must allow "object"), "properties",
// "required" and "default", at the top level and in nested property
// schemas (see the package's caveats). volatile names properties to drop:
// "reason" is a top-level property, "payment.memo" the property memo of
// the object in property payment.
//
// Errors wrap ErrSchema (and the *SyntaxError of an invalid schema or
// default) and say which property was wrong.
func NewNormalizer(schemaJSON []byte, volatile []string) (*Normalizer, error) {
	n := &Normalizer{root: &objectRule{}}
	if len(schemaJSON) > 0 {
		canonical, err := Canonicalize(schemaJSON, &Options{MaxBytes: len(schemaJSON) + 1, MaxDepth: 512})
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSchema, err)
		}
		rule, _, err := parseSchema(canonical, "", true)
		if err != nil {
			return nil, err
		}
		if rule != nil {
			n.root = rule
		}
	}
	for _, path := range volatile {
		if slices.Contains(strings.Split(path, "."), "") {
			return nil, fmt.Errorf("keyderive: %w: volatile path %q has an empty segment", ErrSchema, path)
		}
		n.root.addVolatile(path)
	}
	n.root.finish(&n.extra)
	return n, nil
}

// parseSchema reads one (canonical) schema object, and returns its rules
// and its "default". at is the property path for messages, top whether it
// is the tool's root schema.
func parseSchema(canonical []byte, at string, top bool) (*objectRule, json.RawMessage, error) {
	where := "the schema"
	if at != "" {
		where = "property " + at
	}
	if string(canonical) == "true" || string(canonical) == "false" {
		return nil, nil, nil // boolean schemas: no properties to normalize
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(canonical, &doc); err != nil {
		return nil, nil, fmt.Errorf("keyderive: %w: %s is not a JSON object", ErrSchema, where)
	}
	if top && doc["type"] != nil && !allowsObject(doc["type"]) {
		return nil, nil, fmt.Errorf("keyderive: %w: the schema's type is %s; a tool input must allow \"object\"", ErrSchema, doc["type"])
	}
	rawProps, ok := doc["properties"]
	if !ok {
		return nil, doc["default"], nil
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(rawProps, &props); err != nil {
		return nil, nil, fmt.Errorf("keyderive: %w: \"properties\" of %s is not an object", ErrSchema, where)
	}
	var required []string
	if raw, ok := doc["required"]; ok {
		if err := json.Unmarshal(raw, &required); err != nil {
			return nil, nil, fmt.Errorf("keyderive: %w: \"required\" of %s is not an array of strings", ErrSchema, where)
		}
	}
	rule := &objectRule{props: make(map[string]*propRule, len(props))}
	for name, raw := range props {
		path := name
		if at != "" {
			path = at + "." + name
		}
		p := &propRule{declared: true, required: slices.Contains(required, name)}
		child, def, err := parseSchema(raw, path, false)
		if err != nil {
			return nil, nil, err
		}
		p.child = child
		if def != nil && string(def) != "null" { // canonical, as the schema is
			rule.defaults = append(rule.defaults, defaultMember{key: quoteName(name), value: def, prop: p})
		}
		rule.props[name] = p
	}
	return rule, doc["default"], nil
}

func allowsObject(raw json.RawMessage) bool {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one == "object"
	}
	var many []string
	return json.Unmarshal(raw, &many) == nil && slices.Contains(many, "object")
}

// quoteName returns the canonical escaped form of a member name, without
// quotes.
func quoteName(name string) []byte {
	var out []byte
	for _, r := range name {
		out = appendRune(out, r)
	}
	return out
}

func (o *objectRule) addVolatile(path string) {
	name, rest, nested := strings.Cut(path, ".")
	if o.props == nil {
		o.props = map[string]*propRule{}
	}
	p := o.props[name]
	if p == nil {
		p = &propRule{}
		o.props[name] = p
	}
	if !nested {
		p.volatile = true
		return
	}
	if p.child == nil {
		p.child = &objectRule{}
	}
	p.child.addVolatile(rest)
}

// finish drops defaults of volatile properties, normalizes object defaults
// by their property's rules (normalizing twice changes nothing) and sorts
// the defaults into canonical order, recursively.
func (o *objectRule) finish(extra *int) {
	for _, p := range o.props {
		if p.child != nil {
			p.child.finish(extra)
		}
	}
	o.defaults = slices.DeleteFunc(o.defaults, func(d defaultMember) bool { return d.prop.volatile })
	slices.SortFunc(o.defaults, func(a, b defaultMember) int { return compareKeys(a.key, b.key) })
	for i := range o.defaults {
		d := &o.defaults[i]
		d.member = append(append([]byte{'"'}, d.key...), '"', ':')
		if d.prop.child != nil && d.value[0] == '{' {
			d.member = d.prop.child.apply(d.member, d.value)
		} else {
			d.member = append(d.member, d.value...)
		}
		*extra += len(d.member) + 1
	}
}

// Normalize applies the normalization to canonical JSON and returns
// canonical JSON. Input that is not canonical is canonicalized first (with
// no size limit and a depth limit of 10000: the caller limited it when it
// canonicalized it); invalid JSON fails as in Canonicalize. A value that is
// not an object is returned unchanged.
func (n *Normalizer) Normalize(canonical []byte) ([]byte, error) {
	c, err := Canonicalize(canonical, &Options{MaxBytes: len(canonical) + 1, MaxDepth: 10000})
	if err != nil {
		return nil, err
	}
	return n.normalize(c)
}

// normalize is Normalize for input known to be canonical.
func (n *Normalizer) normalize(canonical []byte) ([]byte, error) {
	if n == nil || len(canonical) == 0 || canonical[0] != '{' {
		return canonical, nil
	}
	out := make([]byte, 0, len(canonical)+n.extra)
	return n.root.apply(out, canonical), nil
}

// apply appends the normalized form of the canonical object obj.
func (o *objectRule) apply(out, obj []byte) []byte {
	out = append(out, '{')
	comma := false
	emit := func(parts ...[]byte) {
		if comma {
			out = append(out, ',')
		}
		comma = true
		for _, p := range parts {
			out = append(out, p...)
		}
	}
	defs := o.defaults
	pos := 1
	for pos < len(obj)-1 {
		start := pos
		keyEnd := skipString(obj, pos)
		key := obj[pos+1 : keyEnd-1]
		valEnd := skipValue(obj, keyEnd+1)
		value := obj[keyEnd+1 : valEnd]
		member := obj[start:valEnd]
		pos = valEnd + 1 // past ','

		for len(defs) > 0 && compareKeys(defs[0].key, key) < 0 {
			emit(defs[0].member)
			defs = defs[1:]
		}
		var def []byte
		if len(defs) > 0 && compareKeys(defs[0].key, key) == 0 {
			def = defs[0].member
			defs = defs[1:]
		}
		var p *propRule
		if o.props != nil {
			if bytes.IndexByte(key, '\\') < 0 {
				p = o.props[string(key)]
			} else {
				p = o.props[decodeName(key)]
			}
		}
		switch {
		case p == nil:
			emit(member)
		case p.volatile:
		case string(value) == "null" && p.declared && !p.required:
			if def != nil {
				emit(def)
			}
		case p.child != nil && value[0] == '{':
			emit(obj[start : keyEnd+1]) // `"name":`
			out = p.child.apply(out, value)
		default:
			emit(member)
		}
	}
	for _, d := range defs {
		emit(d.member)
	}
	return append(out, '}')
}

// decodeName decodes a canonical escaped member name.
func decodeName(key []byte) string {
	var b strings.Builder
	for i := 0; i < len(key); {
		r, n := decodeCanonical(key[i:])
		b.WriteRune(r)
		i += n
	}
	return b.String()
}

// skipString returns the offset just past the canonical string at s[i].
func skipString(s []byte, i int) int {
	for i++; s[i] != '"'; i++ {
		if s[i] == '\\' {
			i++
		}
	}
	return i + 1
}

// skipValue returns the offset just past the canonical value at s[i].
func skipValue(s []byte, i int) int {
	depth := 0
	for ; i < len(s); i++ {
		switch s[i] {
		case '"':
			i = skipString(s, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

package jsonptr

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrNotFound is wrapped by errors for members or elements that do not exist.
var ErrNotFound = errors.New("not found")

// ErrType is wrapped by errors where a pointer walks into a scalar value,
// or uses a non-numeric token on an array.
var ErrType = errors.New("wrong type")

// arrayIndex validates an array index token: "0" or digits without a
// leading zero. "-" (one past the end) is accepted only when allowDash.
func arrayIndex(tok string, length int, allowDash bool) (int, error) {
	if tok == "-" {
		if allowDash {
			return length, nil
		}
		return 0, fmt.Errorf("%w: index \"-\" refers past the end of the array", ErrNotFound)
	}
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, fmt.Errorf("%w: bad array index %q", ErrType, tok)
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: bad array index %q", ErrType, tok)
		}
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i >= length+boolInt(allowDash) {
		return 0, fmt.Errorf("%w: index %s out of range (length %d)", ErrNotFound, tok, length)
	}
	return i, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// step returns the child of v named by tok.
func step(v interface{}, tok string) (interface{}, error) {
	switch node := v.(type) {
	case map[string]interface{}:
		child, ok := node[tok]
		if !ok {
			return nil, fmt.Errorf("%w: member %q", ErrNotFound, tok)
		}
		return child, nil
	case []interface{}:
		i, err := arrayIndex(tok, len(node), false)
		if err != nil {
			return nil, err
		}
		return node[i], nil
	default:
		return nil, fmt.Errorf("%w: cannot look up %q in %T", ErrType, tok, v)
	}
}

// Get returns the value p refers to in doc.
func Get(doc interface{}, p Pointer) (interface{}, error) {
	v := doc
	for i, tok := range p.tokens {
		next, err := step(v, tok)
		if err != nil {
			return nil, fmt.Errorf("jsonptr: %s: %w", Pointer{tokens: p.tokens[:i+1]}, err)
		}
		v = next
	}
	return v, nil
}

// GetString parses s and resolves it; a convenience for one-off lookups.
func GetString(doc interface{}, s string) (interface{}, error) {
	p, err := Parse(s)
	if err != nil {
		return nil, err
	}
	return Get(doc, p)
}

// Has reports whether p refers to an existing value in doc.
func Has(doc interface{}, p Pointer) bool {
	_, err := Get(doc, p)
	return err == nil
}

// Set stores value at p and returns the (possibly new) document. The parent
// must exist. On an object the member is added or replaced; on an array the
// token must be an existing index (replaced) or "-" (appended). Setting the
// root returns value itself.
func Set(doc interface{}, p Pointer, value interface{}) (interface{}, error) {
	if p.IsRoot() {
		return value, nil
	}
	parentPtr, last := p.Parent()
	parent, err := Get(doc, parentPtr)
	if err != nil {
		return doc, err
	}
	switch node := parent.(type) {
	case map[string]interface{}:
		node[last] = value
		return doc, nil
	case []interface{}:
		i, err := arrayIndex(last, len(node), true)
		if err != nil {
			return doc, fmt.Errorf("jsonptr: %s: %w", p, err)
		}
		if i < len(node) {
			node[i] = value
			return doc, nil
		}
		// appending may move the slice: store it back into its parent
		return Set(doc, parentPtr, append(node, value))
	default:
		return doc, fmt.Errorf("jsonptr: %s: %w: cannot set %q in %T", p, ErrType, last, parent)
	}
}

// Remove deletes the value at p and returns the (possibly new) document.
// Removing an array element shifts the later elements down.
func Remove(doc interface{}, p Pointer) (interface{}, error) {
	if p.IsRoot() {
		return nil, nil
	}
	parentPtr, last := p.Parent()
	parent, err := Get(doc, parentPtr)
	if err != nil {
		return doc, err
	}
	switch node := parent.(type) {
	case map[string]interface{}:
		if _, ok := node[last]; !ok {
			return doc, fmt.Errorf("jsonptr: %s: %w: member %q", p, ErrNotFound, last)
		}
		delete(node, last)
		return doc, nil
	case []interface{}:
		i, err := arrayIndex(last, len(node), false)
		if err != nil {
			return doc, fmt.Errorf("jsonptr: %s: %w", p, err)
		}
		shorter := append(node[:i:i], node[i+1:]...)
		return Set(doc, parentPtr, shorter)
	default:
		return doc, fmt.Errorf("jsonptr: %s: %w: cannot remove %q from %T", p, ErrType, last, parent)
	}
}

// Walk calls fn for every value in doc, parents before children, with the
// pointer to it. Object members are visited in sorted key order.
func Walk(doc interface{}, fn func(p Pointer, v interface{}) error) error {
	return walk(Root, doc, fn)
}

func walk(p Pointer, v interface{}, fn func(Pointer, interface{}) error) error {
	if err := fn(p, v); err != nil {
		return err
	}
	switch node := v.(type) {
	case map[string]interface{}:
		for _, k := range sortedKeys(node) {
			if err := walk(p.Append(k), node[k], fn); err != nil {
				return err
			}
		}
	case []interface{}:
		for i, child := range node {
			if err := walk(p.Append(strconv.Itoa(i)), child, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

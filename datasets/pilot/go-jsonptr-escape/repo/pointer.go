// Package jsonptr implements JSON Pointers (RFC 6901): parsing, formatting
// and resolving them against documents decoded by encoding/json into
// map[string]interface{} / []interface{} values.
package jsonptr

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrSyntax is wrapped by every error from Parse and ParseFragment.
var ErrSyntax = errors.New("invalid JSON pointer")

// Pointer is a parsed JSON Pointer: the list of unescaped reference tokens.
// The zero value (no tokens) refers to the whole document.
type Pointer struct {
	tokens []string
}

// Root is the pointer to the whole document ("").
var Root = Pointer{}

// New builds a pointer from unescaped reference tokens.
func New(tokens ...string) Pointer {
	return Pointer{tokens: append([]string(nil), tokens...)}
}

// Parse parses the string representation of a pointer, such as "/a/0/b~1c".
func Parse(s string) (Pointer, error) {
	if s == "" {
		return Root, nil
	}
	if s[0] != '/' {
		return Pointer{}, fmt.Errorf("%w %q: must be empty or start with '/'", ErrSyntax, s)
	}
	parts := strings.Split(s[1:], "/")
	tokens := make([]string, len(parts))
	for i, part := range parts {
		tok, err := unescape(part)
		if err != nil {
			return Pointer{}, fmt.Errorf("%w %q: %v", ErrSyntax, s, err)
		}
		tokens[i] = tok
	}
	return Pointer{tokens: tokens}, nil
}

// MustParse is like Parse but panics on error; for constants in code.
func MustParse(s string) Pointer {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}

// ParseFragment parses the URI fragment form of a pointer, such as
// "#/a%20b/~1c" (the leading '#' is required).
func ParseFragment(s string) (Pointer, error) {
	if !strings.HasPrefix(s, "#") {
		return Pointer{}, fmt.Errorf("%w %q: fragment must start with '#'", ErrSyntax, s)
	}
	decoded, err := url.PathUnescape(s[1:])
	if err != nil {
		return Pointer{}, fmt.Errorf("%w %q: %v", ErrSyntax, s, err)
	}
	return Parse(decoded)
}

// unescape decodes one reference token: "~1" is '/', "~0" is '~'.
func unescape(tok string) (string, error) {
	for i := 0; i < len(tok); i++ {
		if tok[i] != '~' {
			continue
		}
		if i+1 == len(tok) || (tok[i+1] != '0' && tok[i+1] != '1') {
			return "", fmt.Errorf("bad escape at offset %d (use ~0 for '~' and ~1 for '/')", i)
		}
	}
	if !strings.Contains(tok, "~") {
		return tok, nil
	}
	tok = strings.ReplaceAll(tok, "~0", "~")
	return strings.ReplaceAll(tok, "~1", "/"), nil
}

// escape encodes one reference token.
func escape(tok string) string {
	tok = strings.ReplaceAll(tok, "~", "~0")
	return strings.ReplaceAll(tok, "/", "~1")
}

// String returns the pointer in its string form; Parse(p.String()) is p.
func (p Pointer) String() string {
	var b strings.Builder
	for _, tok := range p.tokens {
		b.WriteByte('/')
		b.WriteString(escape(tok))
	}
	return b.String()
}

// Fragment returns the URI fragment form, for example "#/a%20b".
func (p Pointer) Fragment() string {
	var b strings.Builder
	b.WriteByte('#')
	for _, tok := range p.tokens {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(escape(tok)))
	}
	return b.String()
}

// Tokens returns a copy of the unescaped reference tokens.
func (p Pointer) Tokens() []string {
	return append([]string(nil), p.tokens...)
}

// IsRoot reports whether p refers to the whole document.
func (p Pointer) IsRoot() bool { return len(p.tokens) == 0 }

// Parent returns the pointer to the containing value and the last token.
// The parent of the root is the root, with an empty last token.
func (p Pointer) Parent() (Pointer, string) {
	if len(p.tokens) == 0 {
		return Root, ""
	}
	n := len(p.tokens) - 1
	return Pointer{tokens: p.tokens[:n:n]}, p.tokens[n]
}

// Append returns a new pointer with extra tokens at the end.
func (p Pointer) Append(tokens ...string) Pointer {
	out := make([]string, 0, len(p.tokens)+len(tokens))
	out = append(out, p.tokens...)
	return Pointer{tokens: append(out, tokens...)}
}

// HasPrefix reports whether q is p itself or one of its ancestors.
func (p Pointer) HasPrefix(q Pointer) bool {
	if len(q.tokens) > len(p.tokens) {
		return false
	}
	for i, tok := range q.tokens {
		if p.tokens[i] != tok {
			return false
		}
	}
	return true
}

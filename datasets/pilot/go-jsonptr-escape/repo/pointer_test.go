package jsonptr

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// The example document from RFC 6901, section 5.
const rfcDoc = `{
	"foo": ["bar", "baz"],
	"": 0,
	"a/b": 1,
	"c%d": 2,
	"e^f": 3,
	"g|h": 4,
	"i\\j": 5,
	"k\"l": 6,
	" ": 7,
	"m~n": 8
}`

func decodeDoc(t *testing.T, s string) interface{} {
	t.Helper()
	var doc interface{}
	if err := json.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestRFCExamples(t *testing.T) {
	doc := decodeDoc(t, rfcDoc)
	cases := map[string]interface{}{
		"/foo":   []interface{}{"bar", "baz"},
		"/foo/0": "bar",
		"/":      0.0,
		"/a~1b":  1.0,
		"/c%d":   2.0,
		"/e^f":   3.0,
		"/g|h":   4.0,
		"/i\\j":  5.0,
		"/k\"l":  6.0,
		"/ ":     7.0,
		"/m~0n":  8.0,
	}
	for ptr, want := range cases {
		got, err := GetString(doc, ptr)
		if err != nil {
			t.Errorf("%q: %v", ptr, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q = %#v, want %#v", ptr, got, want)
		}
	}
	whole, err := GetString(doc, "")
	if err != nil || !reflect.DeepEqual(whole, doc) {
		t.Errorf("root pointer: %v %v", whole, err)
	}
}

func TestRFCFragments(t *testing.T) {
	doc := decodeDoc(t, rfcDoc)
	cases := map[string]interface{}{
		"#":       doc,
		"#/foo/0": "bar",
		"#/":      0.0,
		"#/a~1b":  1.0,
		"#/c%25d": 2.0,
		"#/e%5Ef": 3.0,
		"#/g%7Ch": 4.0,
		"#/i%5Cj": 5.0,
		"#/k%22l": 6.0,
		"#/%20":   7.0,
		"#/m~0n":  8.0,
	}
	for frag, want := range cases {
		p, err := ParseFragment(frag)
		if err != nil {
			t.Errorf("%q: %v", frag, err)
			continue
		}
		got, err := Get(doc, p)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q = %#v, %v; want %#v", frag, got, err, want)
		}
	}
}

func TestParseTokens(t *testing.T) {
	cases := map[string][]string{
		"":        nil,
		"/":       {""},
		"//":      {"", ""},
		"/a/b":    {"a", "b"},
		"/a~1b":   {"a/b"},
		"/m~0n":   {"m~n"},
		"/~0/~1":  {"~", "/"},
		"/x~1~1y": {"x//y"},
		"/0/-":    {"0", "-"},
	}
	for s, want := range cases {
		p, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		if got := p.Tokens(); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("Parse(%q) tokens = %q, want %q", s, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, s := range []string{"a", "a/b", "/~", "/~2", "/a~", "/~a", "#/a"} {
		if _, err := Parse(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) error = %v, want ErrSyntax", s, err)
		}
	}
	for _, s := range []string{"/a", "#/%zz", "#a"} {
		if _, err := ParseFragment(s); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseFragment(%q) error = %v, want ErrSyntax", s, err)
		}
	}
}

func TestStringAndFragment(t *testing.T) {
	cases := []struct {
		tokens    []string
		str, frag string
	}{
		{nil, "", "#"},
		{[]string{""}, "/", "#/"},
		{[]string{"a/b", "m~n"}, "/a~1b/m~0n", "#/a~1b/m~0n"},
		{[]string{"a b", "c%d"}, "/a b/c%d", "#/a%20b/c%25d"},
	}
	for _, c := range cases {
		p := New(c.tokens...)
		if got := p.String(); got != c.str {
			t.Errorf("New(%q).String() = %q, want %q", c.tokens, got, c.str)
		}
		if got := p.Fragment(); got != c.frag {
			t.Errorf("New(%q).Fragment() = %q, want %q", c.tokens, got, c.frag)
		}
	}
}

func TestParentAppendPrefix(t *testing.T) {
	p := MustParse("/a/b/c")
	parent, last := p.Parent()
	if parent.String() != "/a/b" || last != "c" {
		t.Errorf("Parent = %s, %q", parent, last)
	}
	child := parent.Append("x")
	if child.String() != "/a/b/x" || p.String() != "/a/b/c" {
		t.Errorf("Append changed something: %s %s", child, p)
	}
	if !p.HasPrefix(parent) || !p.HasPrefix(Root) || parent.HasPrefix(p) || p.HasPrefix(MustParse("/a/x")) {
		t.Error("HasPrefix")
	}
	if r, last := Root.Parent(); !r.IsRoot() || last != "" {
		t.Error("Root.Parent")
	}
}

func TestMustParsePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustParse did not panic")
		}
	}()
	MustParse("no-slash")
}

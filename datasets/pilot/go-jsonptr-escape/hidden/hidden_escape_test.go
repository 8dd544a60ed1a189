package jsonptr

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestHiddenTildeFollowedByOne(t *testing.T) {
	cases := map[string][]string{
		"/~01":       {"~1"},
		"/a~01b":     {"a~1b"},
		"/~00":       {"~0"},
		"/~0~1":      {"~/"},
		"/~1~0":      {"/~"},
		"/~011~10":   {"~11/0"},
		"/x/~0~01/y": {"x", "~~1", "y"},
	}
	for s, want := range cases {
		p, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		if got := p.Tokens(); !reflect.DeepEqual(got, want) {
			t.Errorf("Parse(%q) tokens = %q, want %q", s, got, want)
		}
	}
}

func TestHiddenStringParseRoundTrip(t *testing.T) {
	tokens := [][]string{
		{"~1"},
		{"~0"},
		{"backup~1", "v~10"},
		{"a/b~c", "~/~/"},
		{"~", "/", "", "~~11//"},
	}
	for _, toks := range tokens {
		p := New(toks...)
		back, err := Parse(p.String())
		if err != nil {
			t.Errorf("Parse(%q): %v", p.String(), err)
			continue
		}
		if !reflect.DeepEqual(back.Tokens(), toks) {
			t.Errorf("Parse(%q) = %q, want %q", p.String(), back.Tokens(), toks)
		}
		frag, err := ParseFragment(p.Fragment())
		if err != nil || !reflect.DeepEqual(frag.Tokens(), toks) {
			t.Errorf("ParseFragment(%q) = %q, %v; want %q", p.Fragment(), frag.Tokens(), err, toks)
		}
	}
}

func TestHiddenGetMemberWithTildeOne(t *testing.T) {
	var doc interface{}
	if err := json.Unmarshal([]byte(`{"file~1.txt": {"size": 3}, "file/.txt": {"size": 9}}`), &doc); err != nil {
		t.Fatal(err)
	}
	v, err := GetString(doc, "/file~01.txt/size")
	if err != nil || v != 3.0 {
		t.Errorf("/file~01.txt/size = %v, %v; want 3", v, err)
	}
	v, err = GetString(doc, "/file~1.txt/size")
	if err != nil || v != 9.0 {
		t.Errorf("/file~1.txt/size = %v, %v; want 9", v, err)
	}
}

func TestHiddenWalkPointersResolve(t *testing.T) {
	var doc interface{}
	if err := json.Unmarshal([]byte(`{"~1": {"~01": [1]}, "/": 2}`), &doc); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := Walk(doc, func(p Pointer, v interface{}) error {
		n++
		q, err := Parse(p.String())
		if err != nil {
			t.Errorf("Parse(%q): %v", p.String(), err)
			return nil
		}
		got, err := Get(doc, q)
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Errorf("Get(%q) = %v, %v; want %v", p.String(), got, err, v)
		}
		return nil
	})
	if err != nil || n != 5 {
		t.Errorf("walk: %v after %d values", err, n)
	}
}

func TestHiddenSetAndRemoveWithTildeOne(t *testing.T) {
	doc := map[string]interface{}{}
	out, err := Set(doc, MustParse("/rev~01"), "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.(map[string]interface{})["rev~1"]; !ok {
		t.Errorf("Set /rev~01 stored %v, want key \"rev~1\"", out)
	}
	out, err = Remove(out, MustParse("/rev~01"))
	if err != nil || len(out.(map[string]interface{})) != 0 {
		t.Errorf("Remove /rev~01: %v, %v", out, err)
	}
}

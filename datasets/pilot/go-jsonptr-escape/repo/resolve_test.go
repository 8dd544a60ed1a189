package jsonptr

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mustJSON(t *testing.T, v interface{}) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGetErrors(t *testing.T) {
	doc := decodeDoc(t, `{"a": [1, {"b": null}], "s": "str"}`)
	cases := map[string]error{
		"/x":       ErrNotFound,
		"/a/2":     ErrNotFound,
		"/a/-":     ErrNotFound,
		"/a/01":    ErrType,
		"/a/x":     ErrType,
		"/a/-1":    ErrType,
		"/a/":      ErrType,
		"/s/0":     ErrType,
		"/a/1/b/c": ErrType,
	}
	for ptr, want := range cases {
		_, err := GetString(doc, ptr)
		if !errors.Is(err, want) {
			t.Errorf("%q: error %v, want %v", ptr, err, want)
		}
	}
	if v, err := GetString(doc, "/a/1/b"); err != nil || v != nil {
		t.Errorf("null member: %v %v", v, err)
	}
	_, err := GetString(doc, "/a/1/zz")
	if err == nil || !strings.Contains(err.Error(), "/a/1/zz") {
		t.Errorf("error should name the failing pointer: %v", err)
	}
}

func TestHas(t *testing.T) {
	doc := decodeDoc(t, `{"a": {"b": false}}`)
	if !Has(doc, MustParse("/a/b")) || Has(doc, MustParse("/a/c")) {
		t.Error("Has")
	}
}

func TestSet(t *testing.T) {
	doc := decodeDoc(t, `{"a": {"list": [1, 2]}, "n": 1}`)
	steps := []struct {
		ptr   string
		value interface{}
	}{
		{"/n", 2.0},
		{"/new", "x"},
		{"/a/list/0", "first"},
		{"/a/list/-", 3.0},
		{"/a/list/3", 4.0},
		{"/a/m~1n", true},
	}
	var err error
	for _, s := range steps {
		doc, err = Set(doc, MustParse(s.ptr), s.value)
		if err != nil {
			t.Fatalf("Set %s: %v", s.ptr, err)
		}
	}
	want := `{"a":{"list":["first",2,3,4],"m/n":true},"n":2,"new":"x"}`
	if got := mustJSON(t, doc); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	for _, ptr := range []string{"/a/list/9", "/nope/x", "/n/x", "/a/list/x"} {
		if _, err := Set(doc, MustParse(ptr), 0); err == nil {
			t.Errorf("Set %s: no error", ptr)
		}
	}
	root, err := Set(doc, Root, "replaced")
	if err != nil || root != "replaced" {
		t.Errorf("Set root: %v %v", root, err)
	}
}

func TestSetAppendToTopLevelArray(t *testing.T) {
	doc := decodeDoc(t, `[1]`)
	doc, err := Set(doc, MustParse("/-"), 2.0)
	if err != nil || mustJSON(t, doc) != "[1,2]" {
		t.Errorf("%v %v", mustJSON(t, doc), err)
	}
}

func TestRemove(t *testing.T) {
	doc := decodeDoc(t, `{"a": [0, 1, 2], "b": {"c": 1, "d": 2}, "e": [[5, 6]]}`)
	var err error
	for _, ptr := range []string{"/a/1", "/b/c", "/e/0/0"} {
		doc, err = Remove(doc, MustParse(ptr))
		if err != nil {
			t.Fatalf("Remove %s: %v", ptr, err)
		}
	}
	want := `{"a":[0,2],"b":{"d":2},"e":[[6]]}`
	if got := mustJSON(t, doc); got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	for ptr, want := range map[string]error{"/b/zz": ErrNotFound, "/a/5": ErrNotFound, "/a/-": ErrNotFound, "/b/d/x": ErrType} {
		if _, err := Remove(doc, MustParse(ptr)); !errors.Is(err, want) {
			t.Errorf("Remove %s: %v, want %v", ptr, err, want)
		}
	}
	if v, err := Remove(doc, Root); v != nil || err != nil {
		t.Errorf("Remove root: %v %v", v, err)
	}
}

func TestWalk(t *testing.T) {
	doc := decodeDoc(t, `{"b": [true, {"x/y": 1}], "a": "s", "m~n": null}`)
	var seen []string
	err := Walk(doc, func(p Pointer, v interface{}) error {
		seen = append(seen, p.String())
		got, err := Get(doc, p)
		if err != nil || !reflect.DeepEqual(got, v) {
			t.Errorf("Get(%s) = %v, %v; walk saw %v", p, got, err, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"", "/a", "/b", "/b/0", "/b/1", "/b/1/x~1y", "/m~0n"}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("walk order %q, want %q", seen, want)
	}
	stop := errors.New("stop")
	count := 0
	if err := Walk(doc, func(Pointer, interface{}) error { count++; return stop }); err != stop || count != 1 {
		t.Errorf("Walk should stop at the first error: %v after %d", err, count)
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

func runJptr(stdin string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

const doc = `{"name": "demo", "deps": [{"id": "a/b", "v": 1.50}], "~tmp": true}`

func TestGetValue(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"/name"}, "\"demo\"\n"},
		{[]string{"-r", "/name"}, "demo\n"},
		{[]string{"/deps/0/v"}, "1.50\n"},
		{[]string{"/~0tmp"}, "true\n"},
		{[]string{"#/deps/0/id"}, "\"a/b\"\n"},
		{[]string{""}, `{"deps":[{"id":"a/b","v":1.50}],"name":"demo","~tmp":true}` + "\n"},
	}
	for _, c := range cases {
		code, out, errOut := runJptr(doc, c.args...)
		if code != 0 || out != c.want {
			t.Errorf("jptr %q: code %d, out %q, err %q; want %q", c.args, code, out, errOut, c.want)
		}
	}
}

func TestList(t *testing.T) {
	code, out, _ := runJptr(doc, "-list")
	want := "\n/deps\n/deps/0\n/deps/0/id\n/deps/0/v\n/name\n/~0tmp\n"
	if code != 0 || out != want {
		t.Errorf("code %d, out %q, want %q", code, out, want)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		stdin string
		args  []string
		code  int
	}{
		{doc, []string{"/missing"}, 3},
		{doc, []string{"/name/x"}, 1},
		{doc, []string{"bad"}, 2},
		{doc, nil, 2},
		{doc, []string{"/a", "f1", "f2"}, 2},
		{"{", []string{"/a"}, 1},
		{"{} {}", []string{"/a"}, 1},
		{doc, []string{"/a", "/no/such/file.json"}, 1},
	}
	for _, c := range cases {
		if code, _, _ := runJptr(c.stdin, c.args...); code != c.code {
			t.Errorf("jptr %q: code %d, want %d", c.args, code, c.code)
		}
	}
}

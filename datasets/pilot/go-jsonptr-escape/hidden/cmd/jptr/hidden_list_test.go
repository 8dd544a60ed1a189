package main

import (
	"strings"
	"testing"
)

func TestHiddenListedPointersWork(t *testing.T) {
	input := `{"releases": {"v~1": {"notes": "first"}, "v/1": {"notes": "slash"}}}`
	code, out, _ := runJptr(input, "-list")
	if code != 0 {
		t.Fatalf("-list exit %d", code)
	}
	want := map[string]string{
		"/releases/v~01/notes": "\"first\"\n",
		"/releases/v~11/notes": "\"slash\"\n",
	}
	listed := strings.Split(strings.TrimSpace(out), "\n")
	for ptr, value := range want {
		found := false
		for _, l := range listed {
			if l == ptr {
				found = true
			}
		}
		if !found {
			t.Errorf("-list output %q does not contain %q", listed, ptr)
		}
		code, got, errOut := runJptr(input, ptr)
		if code != 0 || got != value {
			t.Errorf("jptr %s: code %d, out %q, err %q; want %q", ptr, code, got, errOut, value)
		}
	}
}

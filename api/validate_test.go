package api

import (
	"strings"
	"testing"
)

func TestValidateNameOf_SegmentRule(t *testing.T) {
	for _, name := range []string{"a", "accounts/A", "a..b/.c/d.", "düsseldorf/日本", "a b?c", strings.Repeat("n", MaxNameLen), "..a", "a/...", "~/x"} {
		if e := ValidateNameOf("lock", name); e != nil {
			t.Errorf("%q: %v; want valid", name, e)
		}
	}
	want := "invalid semaphore name: " + NameRule
	for _, name := range []string{"", "/abs", "a//b", "../up", "a/./b", "a/..", ".", "..", "a/", "/", "a\x00", "a\x7f", "a\u009fb", "\xffa", strings.Repeat("n", MaxNameLen+1)} {
		e := ValidateNameOf("semaphore", name)
		if e == nil || e.Code != CodeInvalidName || e.Message != want {
			t.Errorf("%q: %v; want %s %q", name, e, CodeInvalidName, want)
		}
	}
	for _, p := range []string{"", "accounts/", "a//"} {
		if e := ValidatePrefix(p); e != nil {
			t.Errorf("prefix %q: %v; want valid", p, e)
		}
	}
	if e := ValidatePrefix("a\x01"); e == nil {
		t.Error("prefix with a control character: valid; want refused")
	}
}

package testkit

import (
	"fmt"
	"testing"
)

// fakeT records how a helper ended the test.
type fakeT struct{ fatal, skip string }

func (f *fakeT) Helper()                        {}
func (f *fakeT) Fatalf(format string, a ...any) { f.fatal = fmt.Sprintf(format, a...) }
func (f *fakeT) Skipf(format string, a ...any)  { f.skip = fmt.Sprintf(format, a...) }

// Under CI a missing tool fails the test; elsewhere it skips it.
func TestUnavailable_FailsUnderCISkipsElsewhere(t *testing.T) {
	for _, c := range []struct {
		ci       string
		wantFail bool
	}{{"true", true}, {"1", true}, {"", false}, {"false", false}, {"0", false}} {
		t.Setenv("CI", c.ci)
		var f fakeT
		Unavailable(&f, "no %s here", "ip")
		if failed := f.fatal != ""; failed != c.wantFail || (!failed && f.skip == "") {
			t.Errorf("CI=%q: fatal %q, skip %q", c.ci, f.fatal, f.skip)
		}
	}
}

package testkit

import (
	"fmt"
	"os"
)

// SkipTB is the part of testing.TB that Unavailable uses.
type SkipTB interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// InCI reports whether the CI variable is set to something other than "", "false" or "0":
// then every test runs, and a missing tool or right is a failure, not a skip (.ci/run
// provides what the tests need, so a skip in CI would hide a test that never ran).
func InCI() bool {
	ci := os.Getenv("CI")
	return ci != "" && ci != "false" && ci != "0"
}

// Unavailable ends a test that cannot run on this machine (a tool, a right or a service
// it needs is missing): it skips, loudly, on a developer's machine, and fails under CI.
func Unavailable(t SkipTB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("CI is set, and this test cannot run: %s (.ci/run must provide it)", why)
	}
	t.Skipf("!!! SKIPPING: %s; with CI set this fails instead", why)
}

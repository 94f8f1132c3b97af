package benchkit

import (
	"flag"
	"io"
	"slices"
	"testing"
)

func TestParseWorkloads(t *testing.T) {
	known := []string{Uncontended, Shared}
	unsupported := map[string]string{Semaphore: "no semaphore here"}
	for _, tc := range []struct {
		args    []string
		want    []string
		wantErr string
	}{
		{args: []string{"all", Uncontended}, want: []string{Uncontended, Shared, Uncontended}},
		{args: []string{"--quiet", Shared}, want: []string{Shared}},
		{args: nil},
		{args: []string{"--no-such-flag"}},
		{args: []string{Semaphore}, wantErr: "no semaphore here"},
		{args: []string{Uncontended, "bogus"}, wantErr: `unknown workload "bogus"; known: uncontended, shared, all`},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Bool("quiet", false, "")
		usage := false
		fs.Usage = func() { usage = true }
		got, err := ParseWorkloads(fs, tc.args, known, unsupported)
		if !slices.Equal(got, tc.want) || (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
			t.Errorf("ParseWorkloads(%q) = %q, %v; want %q, %q", tc.args, got, err, tc.want, tc.wantErr)
		}
		if want := tc.args == nil || tc.args[0] == "--no-such-flag"; usage != want {
			t.Errorf("ParseWorkloads(%q): usage printed %t, want %t", tc.args, usage, want)
		}
	}
}

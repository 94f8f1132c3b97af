package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/client"
)

// The one shape of a client command: check the arguments, call the cluster with a
// client built from the flags, print the answer as JSON (--json) or as text for people.

// call builds a client from c's flags and runs do under the command's deadline, --timeout
// plus extra (a wait, a transfer). do's error is reported through commandError.
func call[T any](c *cli.Context, extra time.Duration, do func(ctx context.Context, cl *client.Client) (T, error)) (T, error) {
	var zero T
	cl, err := newClient(c)
	if err != nil {
		return zero, err
	}
	ctx, cancel := callContext(c, extra)
	defer cancel()
	v, err := do(ctx, cl)
	if err != nil {
		return zero, commandError(err)
	}
	return v, nil
}

// request calls the cluster with do, then prints its answer: as JSON with --json, else
// with text.
func request[T any](c *cli.Context, do func(ctx context.Context, cl *client.Client) (T, error), text func(w io.Writer, v T) error) error {
	v, err := call(c, 0, do)
	if err != nil {
		return err
	}
	return answer(c, v, func(w io.Writer) error { return text(w, v) })
}

// answer prints a command's answer to stdout: v as indented JSON with --json, else text.
func answer(c *cli.Context, v any, text func(w io.Writer) error) error {
	if c.Bool("json") {
		return printJSON(c.App.Writer, v)
	}
	return text(c.App.Writer)
}

// say writes a text answer of one formatted line. As for the other short answers, a
// failed write to stdout does not fail the command: what it did is done.
func say(w io.Writer, format string, args ...any) error {
	fmt.Fprintf(w, format, args...)
	return nil
}

// actOn runs a command that does one thing to what its one argument names (usage is
// the error when there is not exactly one), and says so: {key: ID} as JSON, else
// "said ID".
func actOn(c *cli.Context, a parsedArgs, usage, key, said string, do func(cl *client.Client, ctx context.Context, id string) error) error {
	id, err := a.one(c, usage)
	if err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (map[string]string, error) {
		return map[string]string{key: id}, do(cl, ctx, id)
	}, func(w io.Writer, _ map[string]string) error {
		return say(w, "%s %s\n", said, id)
	})
}

// writeRows prints rows as a table under header, one line each by row, or the line empty
// when there are none.
func writeRows[T any](w io.Writer, empty, header string, rows []T, row func(w io.Writer, v T)) error {
	if len(rows) == 0 {
		fmt.Fprintln(w, empty)
		return nil
	}
	return table(w, func(w io.Writer) {
		fmt.Fprintln(w, header)
		for _, v := range rows {
			row(w, v)
		}
	})
}

// table writes what fill prints to w in aligned, tab-separated columns.
func table(w io.Writer, fill func(w io.Writer)) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fill(tw)
	return tw.Flush()
}

// none returns a usage error saying msg unless the command got no arguments.
func (a parsedArgs) none(c *cli.Context, msg string) error {
	if len(a.args) != 0 || a.dash {
		return usageErrorf(c, "%s", msg)
	}
	return nil
}

// one returns the command's only argument, or a usage error saying msg.
func (a parsedArgs) one(c *cli.Context, msg string) (string, error) {
	if len(a.args) != 1 || a.dash {
		return "", usageErrorf(c, "%s", msg)
	}
	return a.args[0], nil
}

// oneName returns the command's only argument, a lock name, or a usage error: msg when
// there is not exactly one, the name's fault when it is invalid.
func (a parsedArgs) oneName(c *cli.Context, msg string) (string, error) {
	name, err := a.one(c, msg)
	if err != nil {
		return "", err
	}
	return name, checkName(c, name)
}

package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/api"
	"github.com/raftlock/raftlock/client"
)

// storeSecretNow is printed with every secret the cluster shows once.
const storeSecretNow = "Store the secret now, somewhere safe (a file of mode 0600 for --acl-token-file, a secret manager): the cluster keeps only a hash of it and can never show it again."

func aclCommand() *cli.Command {
	return &cli.Command{
		Name:  "acl",
		Usage: "bootstrap ACLs, manage policies and tokens",
		Description: `With ACLs on, every request carries a token, given to the client commands by
$RAFTLOCK_ACL_TOKEN or --acl-token-file FILE (--acl-token works but shows the secret
in the process list). A token holds policies; a policy's rules grant deny, read, lock or
admin on lock names by prefix, the longest matching prefix deciding. Admin on the empty
prefix also covers membership and ACL management.

Start with "raftlock acl bootstrap", once per cluster: it prints a management token.`,
		Subcommands: []*cli.Command{
			clientCommand(&cli.Command{
				Name:  "bootstrap",
				Usage: "turn ACLs on and print the first management token (once per cluster)",
				Flags: clientFlags(),
			}, runACLBootstrap),
			{
				Name:  "token",
				Usage: "create, list, revoke or inspect tokens",
				Subcommands: []*cli.Command{
					clientCommand(&cli.Command{
						Name:  "create",
						Usage: "create a token holding policies and print its secret (shown once)",
						Flags: clientFlags(append([]cli.Flag{
							&cli.GenericFlag{Name: "policy", Usage: "a policy the token holds (repeat for more)", Value: &multiValue{}},
							&cli.StringFlag{Name: "description", Usage: "free text for operators (never a secret)"},
						}, quotaFlags("the token's own")...)...),
					}, runACLTokenCreate),
					clientCommand(&cli.Command{
						Name:      "update",
						Usage:     "replace a token's policies, description and quotas (its secret stays)",
						ArgsUsage: "ACCESSOR",
						Description: `Everything but the secret is replaced: name every policy the token is to hold, and
the quotas it is to have of its own (left out: none of its own, so its policies' or
the cluster's defaults apply). Example:

   raftlock acl token update 3f2a... --policy payments --max-locks 200000`,
						Flags: clientFlags(append([]cli.Flag{
							&cli.GenericFlag{Name: "policy", Usage: "a policy the token holds (repeat for more)", Value: &multiValue{}},
							&cli.StringFlag{Name: "description", Usage: "free text for operators (never a secret)"},
						}, quotaFlags("the token's own")...)...),
					}, runACLTokenUpdate),
					clientCommand(&cli.Command{
						Name:  "list",
						Usage: "list the tokens (accessor IDs and policies, never secrets)",
						Flags: clientFlags(),
					}, runACLTokenList),
					clientCommand(&cli.Command{
						Name:      "revoke",
						Usage:     "revoke a token by its accessor ID",
						ArgsUsage: "ACCESSOR",
						Flags:     clientFlags(),
					}, runACLTokenRevoke),
					clientCommand(&cli.Command{
						Name:  "self",
						Usage: "show the token this command sends (without its secret)",
						Flags: clientFlags(),
					}, runACLTokenSelf),
				},
			},
			{
				Name:  "policy",
				Usage: "create, list or delete policies",
				Subcommands: []*cli.Command{
					clientCommand(&cli.Command{
						Name:      "create",
						Usage:     "create a policy, or replace the one of that name",
						ArgsUsage: "NAME",
						Description: `Each --rule is PREFIX=ACCESS: ACCESS (deny, read, lock or admin) on every lock name
that starts with PREFIX. The empty prefix, written "=admin", matches every name and the
cluster-wide operations. Example:

   raftlock acl policy create workers --rule 'jobs/=lock' --rule '=read'`,
						Flags: clientFlags(append([]cli.Flag{
							&cli.GenericFlag{Name: "rule", Usage: "PREFIX=ACCESS (repeat for more)", Value: &multiValue{}},
							&cli.StringFlag{Name: "description", Usage: "free text for operators"},
						}, quotaFlags("the quotas the policy grants its tokens:")...)...),
					}, runACLPolicyCreate),
					clientCommand(&cli.Command{
						Name:  "list",
						Usage: "list the policies and their rules",
						Flags: clientFlags(),
					}, runACLPolicyList),
					clientCommand(&cli.Command{
						Name:      "delete",
						Usage:     "delete a policy",
						ArgsUsage: "NAME",
						Flags:     clientFlags(),
					}, runACLPolicyDelete),
				},
			},
		},
	}
}

// multiValue is a repeatable flag's values, each kept as given: unlike
// cli.StringSliceFlag it never splits at commas, which a lock-name prefix may hold.
type multiValue struct{ vals []string }

// Set implements flag.Value.
func (m *multiValue) Set(v string) error {
	m.vals = append(m.vals, v)
	return nil
}

// String implements flag.Value.
func (m *multiValue) String() string { return strings.Join(m.vals, " ") }

// multi returns the values of the repeatable flag name.
func multi(c *cli.Context, name string) []string {
	if m, ok := c.Generic(name).(*multiValue); ok {
		return m.vals
	}
	return nil
}

// noArgs is the usage error of the acl commands that take no arguments.
func noArgs(c *cli.Context, a parsedArgs) error {
	return a.none(c, c.Command.HelpName+" takes no arguments")
}

func runACLBootstrap(c *cli.Context, a parsedArgs) error {
	if err := noArgs(c, a); err != nil {
		return err
	}
	return newToken(c, func(ctx context.Context, cl *client.Client) (api.ACLToken, error) {
		return cl.ACLBootstrap(ctx)
	})
}

func runACLTokenCreate(c *cli.Context, a parsedArgs) error {
	policies := multi(c, "policy")
	if len(policies) == 0 {
		return usageErrorf(c, "name at least one --policy")
	}
	if err := noArgs(c, a); err != nil {
		return err
	}
	return newToken(c, func(ctx context.Context, cl *client.Client) (api.ACLToken, error) {
		return cl.ACLTokenCreate(ctx, api.ACLTokenRequest{Description: c.String("description"), Policies: policies, Quotas: quotasFrom(c)})
	})
}

func runACLTokenUpdate(c *cli.Context, a parsedArgs) error {
	policies := multi(c, "policy")
	if len(policies) == 0 {
		return usageErrorf(c, "name at least one --policy (every policy the token is to hold)")
	}
	accessor, err := a.one(c, "give exactly one token ACCESSOR ID")
	if err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.ACLToken, error) {
		return cl.ACLTokenUpdate(ctx, accessor, api.ACLTokenRequest{Description: c.String("description"), Policies: policies, Quotas: quotasFrom(c)})
	}, writeToken)
}

// newToken calls the cluster for a token whose secret it shows this once, prints it and
// says so.
func newToken(c *cli.Context, do func(ctx context.Context, cl *client.Client) (api.ACLToken, error)) error {
	tok, err := call(c, 0, do)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		fmt.Fprintln(c.App.ErrWriter, storeSecretNow)
		return printJSON(c.App.Writer, tok)
	}
	if err := writeToken(c.App.Writer, tok); err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "\n%s\n", storeSecretNow)
	return nil
}

func writeToken(w io.Writer, tok api.ACLToken) error {
	return table(w, func(w io.Writer) {
		fmt.Fprintf(w, "accessor\t%s\n", tok.AccessorID)
		if tok.SecretID != "" {
			fmt.Fprintf(w, "secret\t%s\n", tok.SecretID)
		}
		if tok.Description != "" {
			fmt.Fprintf(w, "description\t%s\n", tok.Description)
		}
		fmt.Fprintf(w, "policies\t%s\n", strings.Join(tok.Policies, ", "))
		if tok.Quotas != nil {
			fmt.Fprintf(w, "quotas\t%s\n", formatQuotas(tok.Quotas))
		}
	})
}

func runACLTokenList(c *cli.Context, a parsedArgs) error {
	if err := noArgs(c, a); err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.ACLTokenList, error) {
		toks, err := cl.ACLTokenList(ctx)
		return api.ACLTokenList{Tokens: toks}, err
	}, func(w io.Writer, l api.ACLTokenList) error {
		return writeRows(w, "no tokens", "ACCESSOR\tPOLICIES\tQUOTAS\tDESCRIPTION", l.Tokens, func(w io.Writer, t api.ACLToken) {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.AccessorID, strings.Join(t.Policies, ","), formatQuotas(t.Quotas), t.Description)
		})
	})
}

func runACLTokenRevoke(c *cli.Context, a parsedArgs) error {
	return actOn(c, a, "give exactly one token ACCESSOR ID", "revoked", "revoked token", (*client.Client).ACLTokenRevoke)
}

func runACLTokenSelf(c *cli.Context, a parsedArgs) error {
	if err := noArgs(c, a); err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.ACLToken, error) {
		tok, err := cl.ACLTokenSelf(ctx)
		tok.SecretID = "" // the caller has it; do not print it again
		return tok, err
	}, writeToken)
}

// parseRule reads PREFIX=ACCESS. The split is at the last '=', since a prefix may hold
// '=' and an access never does.
func parseRule(s string) (api.ACLRule, error) {
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		return api.ACLRule{}, fmt.Errorf("rule %q is not PREFIX=ACCESS (an empty prefix is written =ACCESS)", s)
	}
	r := api.ACLRule{Prefix: s[:i], Access: s[i+1:]}
	switch r.Access {
	case api.AccessDeny, api.AccessRead, api.AccessLock, api.AccessAdmin:
		return r, nil
	}
	return api.ACLRule{}, fmt.Errorf("rule %q: access %q is not one of deny, read, lock, admin", s, r.Access)
}

func runACLPolicyCreate(c *cli.Context, a parsedArgs) error {
	specs := multi(c, "rule")
	if len(specs) == 0 {
		return usageErrorf(c, "give at least one --rule PREFIX=ACCESS")
	}
	rules := make([]api.ACLRule, 0, len(specs))
	for _, s := range specs {
		r, err := parseRule(s)
		if err != nil {
			return usageErrorf(c, "%v", err)
		}
		rules = append(rules, r)
	}
	name, err := a.one(c, "give exactly one policy NAME")
	if err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.ACLPolicy, error) {
		return cl.ACLPolicySet(ctx, name, api.ACLPolicyRequest{Description: c.String("description"), Rules: rules, Quotas: quotasFrom(c)})
	}, func(w io.Writer, p api.ACLPolicy) error {
		return table(w, func(w io.Writer) {
			fmt.Fprintf(w, "policy\t%s\n", p.Name)
			if p.Description != "" {
				fmt.Fprintf(w, "description\t%s\n", p.Description)
			}
			fmt.Fprintf(w, "rules\t%s\n", formatRules(p.Rules))
			if p.Quotas != nil {
				fmt.Fprintf(w, "quotas\t%s\n", formatQuotas(p.Quotas))
			}
		})
	})
}

// formatRules writes rules as they are given on the command line.
func formatRules(rules []api.ACLRule) string {
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = fmt.Sprintf("%q", r.Prefix+"="+r.Access)
	}
	return strings.Join(parts, " ")
}

func runACLPolicyList(c *cli.Context, a parsedArgs) error {
	if err := noArgs(c, a); err != nil {
		return err
	}
	return request(c, func(ctx context.Context, cl *client.Client) (api.ACLPolicyList, error) {
		ps, err := cl.ACLPolicyList(ctx)
		return api.ACLPolicyList{Policies: ps}, err
	}, func(w io.Writer, l api.ACLPolicyList) error {
		return writeRows(w, "no policies", "NAME\tRULES\tQUOTAS\tDESCRIPTION", l.Policies, func(w io.Writer, p api.ACLPolicy) {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Name, formatRules(p.Rules), formatQuotas(p.Quotas), p.Description)
		})
	})
}

func runACLPolicyDelete(c *cli.Context, a parsedArgs) error {
	return actOn(c, a, "give exactly one policy NAME", "deleted", "deleted policy", (*client.Client).ACLPolicyDelete)
}

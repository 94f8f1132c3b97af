package main

import (
	"crypto/tls"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/client"
	"github.com/raftlock/raftlock/tlsconf"
)

// Environment variables of the client's security settings. RAFTLOCK_ACL_TOKEN is the ACL
// token's secret; it has nothing to do with RAFTLOCK_TOKEN, the fencing token that
// `raftlock lock` gives its command.
const (
	envACLToken     = "RAFTLOCK_ACL_TOKEN"
	envACLTokenFile = "RAFTLOCK_ACL_TOKEN_FILE"
)

// securityFlags are the TLS and ACL flags every client command takes.
func securityFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "tls-ca", Usage: "the cluster CA certificate (PEM) to verify the nodes with; turns on HTTPS (default endpoints become https://)", EnvVars: []string{"RAFTLOCK_TLS_CA"}},
		&cli.StringFlag{Name: "tls-cert", Usage: "a client certificate (PEM) for clusters that require one, from `raftlock tls cert --client NAME`", EnvVars: []string{"RAFTLOCK_TLS_CERT"}},
		&cli.StringFlag{Name: "tls-key", Usage: "the client certificate's private key (PEM)", EnvVars: []string{"RAFTLOCK_TLS_KEY"}},
		&cli.StringFlag{Name: "acl-token-file", Usage: "read the ACL token's secret from this file (mode 0600) [$" + envACLTokenFile + "]; or set $" + envACLToken},
		&cli.StringFlag{Name: "acl-token", Usage: "the ACL token's secret; it shows in the process list, so prefer $" + envACLToken + " or --acl-token-file"},
	}
}

// securityOptions returns the client options for TLS and the ACL token given by flags and
// environment, and whether TLS is on. Warnings go to stderr; the token never does.
func securityOptions(c *cli.Context) ([]client.Option, bool, error) {
	var opts []client.Option
	tlsCfg, err := tlsConfig(c)
	if err != nil {
		return nil, false, err
	}
	if tlsCfg != nil {
		opts = append(opts, client.WithTLS(tlsCfg))
	}
	token, err := aclToken(c)
	if err != nil {
		return nil, false, err
	}
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	return opts, tlsCfg != nil, nil
}

// tlsConfig loads the client TLS config of --tls-ca, --tls-cert and --tls-key; nil when
// none is given.
func tlsConfig(c *cli.Context) (*tls.Config, error) {
	files := tlsconf.Files{CA: c.String("tls-ca"), Cert: c.String("tls-cert"), Key: c.String("tls-key")}
	if files.CA == "" && files.Cert == "" && files.Key == "" {
		return nil, nil
	}
	cfg, err := tlsconf.LoadClientConfig(files)
	if err != nil {
		return nil, usageErrorf(c, "%v", err)
	}
	return cfg, nil
}

// aclToken returns the ACL token's secret from, in this order: --acl-token (with a
// warning that argv is public), --acl-token-file, $RAFTLOCK_ACL_TOKEN,
// $RAFTLOCK_ACL_TOKEN_FILE. Empty means no token.
func aclToken(c *cli.Context) (string, error) {
	if c.IsSet("acl-token") && c.IsSet("acl-token-file") {
		return "", usageErrorf(c, "give --acl-token or --acl-token-file, not both")
	}
	if c.IsSet("acl-token") {
		fmt.Fprintf(c.App.ErrWriter, "raftlock: warning: --acl-token shows the token to every user of this machine (the process list, /proc); use $%s or --acl-token-file instead\n", envACLToken)
		if strings.TrimSpace(c.String("acl-token")) == "" {
			return "", usageErrorf(c, "--acl-token is empty")
		}
		return c.String("acl-token"), nil
	}
	if c.IsSet("acl-token-file") {
		return readTokenFile(c, "--acl-token-file", c.String("acl-token-file"))
	}
	if v := os.Getenv(envACLToken); strings.TrimSpace(v) != "" {
		return v, nil
	}
	if path := os.Getenv(envACLTokenFile); path != "" {
		return readTokenFile(c, "$"+envACLTokenFile, path)
	}
	return "", nil
}

// readTokenFile reads a token file, given by source (a flag or variable name). Errors
// name the file, never its contents; a file other users can read earns a warning.
func readTokenFile(c *cli.Context, source, path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", usageErrorf(c, "%s: %v", source, err)
	}
	if !fi.Mode().IsRegular() && fi.Mode()&os.ModeNamedPipe == 0 {
		return "", usageErrorf(c, "%s: %s is not a regular file", source, path)
	}
	if runtime.GOOS != "windows" && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(c.App.ErrWriter, "raftlock: warning: %s %s can be read by other users (mode %04o); chmod 600 it\n", source, path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", usageErrorf(c, "%s: %v", source, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", usageErrorf(c, "%s: %s holds no token", source, path)
	}
	return tok, nil
}

package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/raftlock/raftlock/tlsconf"
)

func tlsCommand() *cli.Command {
	return &cli.Command{
		Name:  "tls",
		Usage: "create a cluster CA and node or client certificates",
		Description: `A small CA for clusters without a PKI of their own. "tls ca" writes ca.pem and
ca-key.pem; keep ca-key.pem offline, it signs every certificate of the cluster. "tls cert"
signs a node certificate (--node ID, for "raftlock serve") or a client certificate
(--client NAME, for workers and the CLI when nodes run with --tls-client-auth require).
Key files are written with mode 0600. Existing files are never overwritten.`,
		Subcommands: []*cli.Command{
			clientCommand(&cli.Command{
				Name:  "ca",
				Usage: "create a CA: ca.pem and ca-key.pem",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "dir", Usage: "directory to write to", Value: "."},
					&cli.StringFlag{Name: "name", Usage: "the CA's common name", Value: tlsconf.DefaultCAName},
					&cli.IntFlag{Name: "days", Usage: "validity in days (0: 5 years)"},
				},
			}, runTLSCA),
			clientCommand(&cli.Command{
				Name:  "cert",
				Usage: "sign a node (--node ID) or client (--client NAME) certificate with the CA",
				Description: `Writes ID.pem and ID-key.pem (or NAME.pem and NAME-key.pem) to --dir. A node
certificate names the node's addresses: give every IP (--ip) and host name (--dns) that
peers and clients use to reach it; 127.0.0.1 and localhost are added unless
--no-localhost.

   raftlock tls cert --node n1 --ip 10.0.0.1 --dns n1.example.internal
   raftlock tls cert --client billing-worker`,
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "node", Usage: "the node's ID, as given to raftlock serve --id"},
					&cli.StringFlag{Name: "client", Usage: "the client's name"},
					&cli.GenericFlag{Name: "ip", Usage: "an IP address of the node (repeat for more)", Value: &multiValue{}},
					&cli.GenericFlag{Name: "dns", Usage: "a host name of the node (repeat for more)", Value: &multiValue{}},
					&cli.BoolFlag{Name: "no-localhost", Usage: "leave 127.0.0.1 and localhost out of a node certificate"},
					&cli.StringFlag{Name: "dir", Usage: "directory to write to", Value: "."},
					&cli.StringFlag{Name: "ca", Usage: "the CA certificate (default: ca.pem in --dir)"},
					&cli.StringFlag{Name: "ca-key", Usage: "the CA's private key (default: ca-key.pem in --dir)"},
					&cli.IntFlag{Name: "days", Usage: "validity in days (0: 1 year; never past the CA's expiry)"},
				},
			}, runTLSCert),
		},
	}
}

// validity turns --days into a duration; zero keeps tlsconf's default.
func validity(c *cli.Context) (time.Duration, error) {
	d := c.Int("days")
	if d < 0 || d > 100*365 {
		return 0, usageErrorf(c, "--days %d is outside 0 to %d", d, 100*365)
	}
	return time.Duration(d) * 24 * time.Hour, nil
}

func runTLSCA(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 0 || a.dash {
		return usageErrorf(c, "tls ca takes no arguments")
	}
	v, err := validity(c)
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := tlsconf.GenerateCA(tlsconf.CAOptions{Name: c.String("name"), Validity: v})
	if err != nil {
		return cli.Exit("raftlock: "+err.Error(), 1)
	}
	dir := c.String("dir")
	certPath, keyPath, err := tlsconf.WriteFiles(dir, "ca", certPEM, keyPEM)
	if err != nil {
		return cli.Exit("raftlock: "+err.Error(), 1)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "wrote %s (the CA certificate: give it to every node and client)\n", certPath)
	fmt.Fprintf(w, "wrote %s (the CA key, mode 0600: keep it offline; it signs every certificate of the cluster)\n", keyPath)
	dirFlag := ""
	if dir != "." {
		dirFlag = " --dir " + shellQuote(dir)
	}
	fmt.Fprintf(w, "\nnext, a certificate per node and per client:\n")
	fmt.Fprintf(w, "  raftlock tls cert --node n1 --ip 10.0.0.1%s\n", dirFlag)
	fmt.Fprintf(w, "  raftlock tls cert --client worker%s\n", dirFlag)
	return nil
}

func runTLSCert(c *cli.Context, a parsedArgs) error {
	if len(a.args) != 0 || a.dash {
		return usageErrorf(c, "tls cert takes no arguments, only flags")
	}
	node, name := c.String("node"), c.String("client")
	if (node == "") == (name == "") {
		return usageErrorf(c, "give exactly one of --node ID and --client NAME")
	}
	ips, dns := splitList(multi(c, "ip")), splitList(multi(c, "dns"))
	if name != "" && (len(ips) > 0 || len(dns) > 0 || c.Bool("no-localhost")) {
		return usageErrorf(c, "--ip, --dns and --no-localhost are for node certificates")
	}
	var parsed []net.IP
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			return usageErrorf(c, "--ip %q is not an IP address", s)
		}
		parsed = append(parsed, ip)
	}
	v, err := validity(c)
	if err != nil {
		return err
	}
	dir := c.String("dir")
	caPath, caKeyPath := c.String("ca"), c.String("ca-key")
	if caPath == "" {
		caPath = filepath.Join(dir, "ca.pem")
	}
	if caKeyPath == "" {
		caKeyPath = filepath.Join(dir, "ca-key.pem")
	}
	caPEM, err := os.ReadFile(caPath)
	if err != nil {
		return usageErrorf(c, "--ca: %v (create a CA with raftlock tls ca)", err)
	}
	caKeyPEM, err := os.ReadFile(caKeyPath)
	if err != nil {
		return usageErrorf(c, "--ca-key: %v", err)
	}
	var certPEM, keyPEM []byte
	base := node
	if node != "" {
		certPEM, keyPEM, err = tlsconf.IssueNode(caPEM, caKeyPEM, tlsconf.NodeCertOptions{
			ID: node, IPs: parsed, DNSNames: dns, NoLocalhost: c.Bool("no-localhost"), Validity: v,
		})
	} else {
		base = name
		certPEM, keyPEM, err = tlsconf.IssueClient(caPEM, caKeyPEM, name, tlsconf.ClientCertOptions{Validity: v})
	}
	if err != nil {
		return cli.Exit(fmt.Sprintf("raftlock: signing with %s and %s: %v", caPath, caKeyPath, err), 1)
	}
	certPath, keyPath, err := tlsconf.WriteFiles(dir, base, certPEM, keyPEM)
	if err != nil {
		return cli.Exit("raftlock: "+err.Error(), 1)
	}
	w := c.App.Writer
	fmt.Fprintf(w, "wrote %s\n", certPath)
	fmt.Fprintf(w, "wrote %s (mode 0600)\n", keyPath)
	flags := fmt.Sprintf("--tls-cert %s --tls-key %s --tls-ca %s", shellQuote(certPath), shellQuote(keyPath), shellQuote(caPath))
	if node != "" {
		fmt.Fprintf(w, "\nstart the node with:\n  raftlock serve --id %s ... %s\n", shellQuote(node), flags)
		return nil
	}
	fmt.Fprintf(w, "\nuse it from client commands with:\n  %s\n", flags)
	fmt.Fprintf(w, "or the environment:\n  RAFTLOCK_TLS_CERT=%s RAFTLOCK_TLS_KEY=%s RAFTLOCK_TLS_CA=%s\n", shellQuote(certPath), shellQuote(keyPath), shellQuote(caPath))
	fmt.Fprintf(w, "(nodes demand client certificates with raftlock serve --tls-client-auth require)\n")
	return nil
}

// splitList splits each value at commas too, so that --ip a,b works like --ip a --ip b
// (neither addresses nor host names hold commas).
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		out = append(out, commaList(v)...)
	}
	return out
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters, so
// the printed commands can be pasted.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

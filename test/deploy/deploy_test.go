package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/BurntSushi/toml"
	"gopkg.in/yaml.v3"

	"github.com/raftlock/raftlock/test/testcluster"
	"github.com/raftlock/raftlock/test/testkit"
)

// root is the repository root, relative to this package.
const root = "../.."

func deployFile(parts ...string) string {
	return filepath.Join(append([]string{root, "deploy"}, parts...)...)
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	flagsOnce sync.Once
	flagsErr  error
	flagSet   map[string]bool
)

// serveFlags returns the long flags `raftlock serve --help` lists, from a binary built
// from this module.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	bin := testcluster.Binary(t)
	flagsOnce.Do(func() {
		out, err := exec.Command(bin, "serve", "--help").CombinedOutput()
		if err != nil {
			flagsErr = fmt.Errorf("raftlock serve --help: %v\n%s", err, out)
			return
		}
		flagSet = map[string]bool{}
		re := regexp.MustCompile(`^\s+--([a-z0-9-]+)`)
		for _, l := range strings.Split(string(out), "\n") {
			if m := re.FindStringSubmatch(l); m != nil {
				flagSet[m[1]] = true
			}
		}
		if !flagSet["id"] || !flagSet["data-dir"] || !flagSet["config"] {
			flagsErr = fmt.Errorf("could not read serve's flags from its help:\n%s", out)
		}
	})
	if flagsErr != nil {
		t.Fatal(flagsErr)
	}
	return flagSet
}

// checkArgs checks that every --flag in args is one of serve's flags.
func checkArgs(t *testing.T, where string, args []string) {
	t.Helper()
	flags := serveFlags(t)
	n := 0
	for _, a := range args {
		if !strings.HasPrefix(a, "--") {
			continue
		}
		n++
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !flags[name] {
			t.Errorf("%s passes --%s, which `raftlock serve --help` does not list", where, name)
		}
	}
	if n == 0 {
		t.Errorf("%s passes no flags to serve; is the parser out of date?", where)
	}
}

// checkEnv checks that every RAFTLOCK_* variable names one of serve's flags.
func checkEnv(t *testing.T, where string, names []string) {
	t.Helper()
	flags := serveFlags(t)
	for _, n := range names {
		flag := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(n, "RAFTLOCK_")), "_", "-")
		if !flags[flag] {
			t.Errorf("%s sets %s, but serve has no --%s", where, n, flag)
		}
	}
}

// printConfig runs `raftlock serve ARGS --print-config` with env added to the
// environment: serve parses every flag, the environment and the --config file, then
// prints the merged settings without starting a node.
func printConfig(t *testing.T, env []string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(testcluster.Binary(t), append(append([]string{"serve"}, args...), "--print-config")...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "RAFTLOCK_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("raftlock serve %s --print-config: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var cfg map[string]any
	if _, err := toml.Decode(string(out), &cfg); err != nil {
		t.Fatalf("print-config printed something that is not TOML: %v\n%s", err, out)
	}
	return cfg
}

// unit is a systemd unit file: section -> key -> values in order (keys may repeat).
type unit map[string]map[string][]string

// parseUnit reads the ini-style syntax of systemd unit files: [Section] headers, Key=Value
// lines, # and ; comments, and lines continued with a trailing backslash.
func parseUnit(t *testing.T, text string) unit {
	t.Helper()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	n := 0
	pending := ""
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if pending != "" {
			line = pending + " " + line
			pending = ""
		}
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			pending = strings.TrimSuffix(line, `\`)
			continue
		}
		if line[0] == '[' && line[len(line)-1] == ']' {
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			t.Fatalf("unit line %d: %q is not Key=Value inside a section", n, line)
		}
		k = strings.TrimSpace(k)
		u[section][k] = append(u[section][k], strings.TrimSpace(v))
	}
	return u
}

// last returns the effective (last) value of a key, and whether it is set.
func (u unit) last(section, key string) (string, bool) {
	vs := u[section][key]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

func TestSystemdUnit_Hardened(t *testing.T) {
	u := parseUnit(t, read(t, deployFile("systemd", "raftlock.service")))
	want := map[string]string{
		"NoNewPrivileges":          "yes",
		"StateDirectory":           "raftlock",
		"ProtectSystem":            "strict",
		"ProtectHome":              "yes",
		"PrivateTmp":               "yes",
		"PrivateDevices":           "yes",
		"ProtectKernelTunables":    "yes",
		"ProtectKernelModules":     "yes",
		"ProtectKernelLogs":        "yes",
		"RestrictAddressFamilies":  "AF_INET AF_INET6 AF_UNIX",
		"CapabilityBoundingSet":    "",
		"SystemCallFilter":         "@system-service",
		"UMask":                    "0077",
		"LimitNOFILE":              "65536",
		"Restart":                  "on-failure",
		"RestartPreventExitStatus": "3",
		"KillSignal":               "SIGTERM",
		"TimeoutStopSec":           "30",
		"ExecReload":               "/bin/kill -HUP $MAINPID",
	}
	for k, v := range want {
		got, ok := u.last("Service", k)
		if !ok || got != v {
			t.Errorf("[Service] %s = %q (set: %v), want %q", k, got, ok, v)
		}
	}
	// A user of its own: a transient one, or a named one.
	if d, _ := u.last("Service", "DynamicUser"); d != "yes" {
		if usr, ok := u.last("Service", "User"); !ok || usr == "" || usr == "root" {
			t.Errorf("the unit runs as root: set DynamicUser=yes or a dedicated User=")
		}
	}
	// Settings come from the TOML file and the environment file.
	start, _ := u.last("Service", "ExecStart")
	if !strings.Contains(start, " serve ") || !strings.Contains(start, "--config /etc/raftlock/raftlock.toml") {
		t.Errorf("ExecStart %q does not run serve with --config /etc/raftlock/raftlock.toml", start)
	}
	if env, _ := u.last("Service", "EnvironmentFile"); strings.TrimPrefix(env, "-") != "/etc/raftlock/raftlock.env" {
		t.Errorf("EnvironmentFile = %q, want /etc/raftlock/raftlock.env", env)
	}
	if w, _ := u.last("Install", "WantedBy"); w != "multi-user.target" {
		t.Errorf("[Install] WantedBy = %q", w)
	}
}

// TestSystemdUnit_Verify asks systemd itself about the unit, when systemd-analyze is
// installed: `verify` (syntax, unknown keys, the executable) and `security` (exposure).
func TestSystemdUnit_Verify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		testkit.Unavailable(t, "systemd-analyze is not installed (Debian's systemd package); the unit's keys are checked by TestSystemdUnit_Hardened only")
	}
	// verify checks that ExecStart's program exists: point it at a binary built here.
	dir := t.TempDir()
	text := strings.ReplaceAll(read(t, deployFile("systemd", "raftlock.service")), "/usr/local/bin/raftlock", testcluster.Binary(t))
	path := filepath.Join(dir, "raftlock.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	// verify reports unknown keys and bad values as warnings with exit status 0.
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "raftlock.service") {
			t.Errorf("systemd-analyze verify: %s", l)
		}
	}
	// --threshold=20: fail above an exposure of 2.0 (of 10).
	out, err = exec.Command(analyze, "security", "--offline=yes", "--threshold=20", path).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Errorf("systemd-analyze security: exposure above 2.0:\n%s", out)
	} else if err != nil {
		t.Logf("systemd-analyze security could not run (%v); skipping the exposure check", err)
	} else if i := strings.LastIndex(string(out), "Overall exposure level"); i >= 0 {
		t.Log(strings.TrimSpace(string(out[i:])))
	}
}

// execStartArgs returns what ExecStart passes to raftlock, after "serve".
func execStartArgs(t *testing.T, u unit) []string {
	t.Helper()
	start, _ := u.last("Service", "ExecStart")
	words := strings.Fields(start)
	i := slices.Index(words, "serve")
	if i < 0 {
		t.Fatalf("ExecStart %q does not run serve", start)
	}
	return words[i+1:]
}

// commentedKey matches a TOML key left commented out for the reader to enable.
var commentedKey = regexp.MustCompile(`^#\s*([a-z][a-z0-9-]*)\s*=`)

func TestSystemd_FlagsAndConfigKeysAreServeFlags(t *testing.T) {
	u := parseUnit(t, read(t, deployFile("systemd", "raftlock.service")))
	checkArgs(t, "raftlock.service ExecStart", execStartArgs(t, u))

	// Every key of the example, set or commented out, is a flag name.
	path := deployFile("systemd", "raftlock.toml.example")
	text := read(t, path)
	var cfg map[string]any
	if _, err := toml.Decode(text, &cfg); err != nil {
		t.Fatalf("%s is not TOML: %v", path, err)
	}
	if len(cfg) < 5 {
		t.Fatalf("%s sets only %d keys", path, len(cfg))
	}
	flags := serveFlags(t)
	var keys []string
	for k := range cfg {
		keys = append(keys, k)
	}
	for _, l := range strings.Split(text, "\n") {
		if m := commentedKey.FindStringSubmatch(l); m != nil {
			keys = append(keys, m[1])
		}
	}
	for _, k := range keys {
		if !flags[k] {
			t.Errorf("%s: key %q is not a serve flag", path, k)
		}
	}
	// serve reads the file, and the data lives where the unit's StateDirectory puts it.
	got := printConfig(t, nil, "--config", path)
	if got["data-dir"] != "/var/lib/raftlock" {
		t.Errorf("data-dir from the example = %v, want /var/lib/raftlock (StateDirectory=raftlock)", got["data-dir"])
	}
	for k, v := range cfg {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("serve read %s = %v from the example, which says %v", k, got[k], v)
		}
	}

	// The environment file's variables name flags too.
	var names []string
	re := regexp.MustCompile(`^#?\s*(RAFTLOCK_[A-Z0-9_]+)=`)
	for _, l := range strings.Split(read(t, deployFile("systemd", "raftlock.env.example")), "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Error("raftlock.env.example names no RAFTLOCK_ variable")
	}
	checkEnv(t, "raftlock.env.example", names)
}

// dockerfile is the instructions of a Dockerfile, continuation lines joined, comments
// kept apart.
type dockerfile struct {
	instrs   [][2]string // instruction (upper case), its arguments
	comments string
}

func parseDockerfile(text string) dockerfile {
	var d dockerfile
	cur := ""
	for _, l := range strings.Split(text, "\n") {
		s := strings.TrimSpace(l)
		if strings.HasPrefix(s, "#") {
			d.comments += s + "\n"
			continue
		}
		if s == "" && cur == "" {
			continue
		}
		if strings.HasSuffix(s, `\`) {
			cur += strings.TrimSuffix(s, `\`) + " "
			continue
		}
		cur += s
		if cur = strings.TrimSpace(cur); cur != "" {
			op, args, _ := strings.Cut(cur, " ")
			d.instrs = append(d.instrs, [2]string{strings.ToUpper(op), strings.TrimSpace(args)})
		}
		cur = ""
	}
	return d
}

// all returns the arguments of every instruction op.
func (d dockerfile) all(op string) []string {
	var out []string
	for _, in := range d.instrs {
		if in[0] == op {
			out = append(out, in[1])
		}
	}
	return out
}

// execForm decodes a JSON-array (exec form) argument list.
func execForm(t *testing.T, op, args string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(args), &out); err != nil {
		t.Fatalf("%s %s: not the exec (JSON array) form, which a shell-less image needs: %v", op, args, err)
	}
	return out
}

func TestDockerfile(t *testing.T) {
	d := parseDockerfile(read(t, deployFile("container", "Dockerfile")))
	froms := d.all("FROM")
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got FROM %v", froms)
	}
	final := strings.Fields(froms[len(froms)-1])[0]
	if final != "scratch" && !strings.HasPrefix(final, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s; want scratch or distroless static", final)
	}
	build := strings.Join(d.all("RUN"), "\n")
	for _, s := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`, "./cmd/raftlock"} {
		if !strings.Contains(build, s) {
			t.Errorf("the build does not use %s", s)
		}
	}
	users := d.all("USER")
	if len(users) == 0 {
		t.Fatal("no USER: the image would run as root")
	}
	uid, _, _ := strings.Cut(users[len(users)-1], ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		t.Errorf("USER %s: want a numeric non-root user (Kubernetes' runAsNonRoot can check only a number)", users[len(users)-1])
	}
	if v := strings.Join(d.all("VOLUME"), " "); !strings.Contains(v, "/data") {
		t.Errorf("VOLUME %q does not declare /data", v)
	}
	exposed := strings.Fields(strings.Join(d.all("EXPOSE"), " "))
	for _, p := range []string{"7001", "8001"} {
		if !slices.Contains(exposed, p) {
			t.Errorf("EXPOSE %v lacks %s", exposed, p)
		}
	}
	if !strings.Contains(d.comments, "/healthz") || !strings.Contains(d.comments, "/readyz") {
		t.Error("the Dockerfile does not say where probes come from (/healthz, /readyz)")
	}

	eps, cmds := d.all("ENTRYPOINT"), d.all("CMD")
	if len(eps) != 1 {
		t.Fatalf("want one ENTRYPOINT, got %v", eps)
	}
	ep := execForm(t, "ENTRYPOINT", eps[0])
	i := slices.Index(ep, "serve")
	if len(ep) < 2 || filepath.Base(ep[0]) != "raftlock" || i != 1 {
		t.Fatalf("ENTRYPOINT %v does not run raftlock serve", ep)
	}
	args := ep[2:]
	if len(cmds) > 0 {
		args = append(args, execForm(t, "CMD", cmds[len(cmds)-1])...)
	}
	checkArgs(t, "Dockerfile ENTRYPOINT+CMD", args)

	// ENV RAFTLOCK_* settings name flags, and serve accepts them with the arguments.
	var env []string
	for _, e := range d.all("ENV") {
		for _, kv := range strings.Fields(e) {
			if strings.HasPrefix(kv, "RAFTLOCK_") {
				env = append(env, kv)
			}
		}
	}
	var names []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	checkEnv(t, "Dockerfile ENV", names)
	got := printConfig(t, env, args...)
	if got["data-dir"] != "/data" {
		t.Errorf("the image's data-dir is %v, want /data (its VOLUME)", got["data-dir"])
	}
}

// docs decodes every document of a multi-document YAML file.
func docs(t *testing.T, path string) []map[string]any {
	t.Helper()
	dec := yaml.NewDecoder(strings.NewReader(read(t, path)))
	var out []map[string]any
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
}

// dig follows keys (string: map key, int: list index) into decoded YAML; nil when absent.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func strs(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func TestKubernetesManifest(t *testing.T) {
	all := docs(t, deployFile("kubernetes", "raftlock.yaml"))
	byKind := map[string][]map[string]any{}
	for _, d := range all {
		if d["apiVersion"] == nil || dig(d, "metadata", "name") == nil {
			t.Errorf("a document without apiVersion or metadata.name: %v", d)
		}
		k := fmt.Sprint(d["kind"])
		byKind[k] = append(byKind[k], d)
	}
	if len(byKind["Service"]) != 2 || len(byKind["StatefulSet"]) != 1 || len(byKind["PodDisruptionBudget"]) != 1 || len(all) != 4 {
		t.Fatalf("want 2 Services, a StatefulSet and a PodDisruptionBudget; got %d documents: %v", len(all), byKind)
	}
	sts := byKind["StatefulSet"][0]
	name := fmt.Sprint(dig(sts, "metadata", "name"))
	peers := fmt.Sprint(dig(sts, "spec", "serviceName"))

	var headless map[string]any
	for _, s := range byKind["Service"] {
		if dig(s, "metadata", "name") == peers {
			headless = s
		}
	}
	if headless == nil {
		t.Fatalf("no Service named %s (the StatefulSet's serviceName)", peers)
	}
	if dig(headless, "spec", "clusterIP") != "None" || dig(headless, "spec", "publishNotReadyAddresses") != true {
		t.Errorf("Service %s: want clusterIP None and publishNotReadyAddresses true (peers resolve each other before they are ready)", peers)
	}

	spec := dig(sts, "spec")
	if dig(spec, "replicas") != 3 || dig(spec, "podManagementPolicy") != "Parallel" {
		t.Errorf("StatefulSet: replicas %v, podManagementPolicy %v; want 3, Parallel", dig(spec, "replicas"), dig(spec, "podManagementPolicy"))
	}
	if dig(byKind["PodDisruptionBudget"][0], "spec", "maxUnavailable") != 1 {
		t.Error("PodDisruptionBudget: want maxUnavailable 1")
	}
	pod := dig(spec, "template", "spec")
	anti := dig(pod, "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", 0)
	if dig(anti, "topologyKey") != "kubernetes.io/hostname" || dig(anti, "labelSelector") == nil {
		t.Errorf("want required pod anti-affinity on kubernetes.io/hostname, got %v", anti)
	}
	if dig(pod, "securityContext", "runAsNonRoot") != true || dig(pod, "securityContext", "seccompProfile", "type") != "RuntimeDefault" {
		t.Errorf("pod securityContext %v: want runAsNonRoot and seccompProfile RuntimeDefault", dig(pod, "securityContext"))
	}
	c := dig(pod, "containers", 0)
	sc := dig(c, "securityContext")
	if dig(sc, "readOnlyRootFilesystem") != true || dig(sc, "allowPrivilegeEscalation") != false || !slices.Contains(strs(dig(sc, "capabilities", "drop")), "ALL") {
		t.Errorf("container securityContext %v: want readOnlyRootFilesystem, no privilege escalation, drop ALL", sc)
	}
	if dig(c, "livenessProbe", "httpGet", "path") != "/healthz" || dig(c, "readinessProbe", "httpGet", "path") != "/readyz" {
		t.Errorf("probes: liveness %v, readiness %v; want /healthz, /readyz", dig(c, "livenessProbe", "httpGet", "path"), dig(c, "readinessProbe", "httpGet", "path"))
	}
	if dig(c, "resources", "requests", "cpu") == nil || dig(c, "resources", "requests", "memory") == nil {
		t.Error("no cpu and memory requests")
	}
	var mount string
	for _, m := range dig(c, "volumeMounts").([]any) {
		if dig(m, "name") == dig(spec, "volumeClaimTemplates", 0, "metadata", "name") {
			mount = fmt.Sprint(dig(m, "mountPath"))
		}
	}

	// The arguments: serve's flags only, and consistent with the objects around them.
	args := strs(dig(c, "args"))
	if cmd := strs(dig(c, "command")); len(cmd) > 0 {
		t.Errorf("command %v replaces the image's ENTRYPOINT (raftlock serve); pass args only", cmd)
	}
	checkArgs(t, "raftlock.yaml container args", args)
	arg := func(flag string) string {
		for i, a := range args {
			if a == flag && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, flag+"="); ok {
				return v
			}
		}
		return ""
	}
	ports := map[string]string{}
	for _, p := range dig(c, "ports").([]any) {
		ports[fmt.Sprint(dig(p, "name"))] = fmt.Sprint(dig(p, "containerPort"))
	}
	fqdn := func(pod string) string { return pod + "." + peers + ".$(NAMESPACE).svc.cluster.local" }
	checks := map[string]string{
		"--id":             "$(POD_NAME)",
		"--data-dir":       mount,
		"--http-addr":      "0.0.0.0:" + ports["http"],
		"--raft-addr":      "0.0.0.0:" + ports["raft"],
		"--http-advertise": fqdn("$(POD_NAME)") + ":" + ports["http"],
		"--raft-advertise": fqdn("$(POD_NAME)") + ":" + ports["raft"],
	}
	for flag, want := range checks {
		if got := arg(flag); got != want {
			t.Errorf("%s %q, want %q", flag, got, want)
		}
	}
	var boot []string
	for i := 0; i < 3; i++ {
		p := fmt.Sprintf("%s-%d", name, i)
		boot = append(boot, p+"="+fqdn(p)+":"+ports["raft"])
	}
	if got := arg("--bootstrap"); got != strings.Join(boot, ",") {
		t.Errorf("--bootstrap %q, want %q", got, strings.Join(boot, ","))
	}
	var envNames []string
	for _, e := range dig(c, "env").([]any) {
		envNames = append(envNames, fmt.Sprint(dig(e, "name")))
	}
	for _, v := range []string{"POD_NAME", "NAMESPACE"} {
		if !slices.Contains(envNames, v) {
			t.Errorf("env lacks %s, which the args use", v)
		}
	}
	var raftlockEnv []string
	for _, n := range envNames {
		if strings.HasPrefix(n, "RAFTLOCK_") {
			raftlockEnv = append(raftlockEnv, n)
		}
	}
	checkEnv(t, "raftlock.yaml env", raftlockEnv)

	// serve parses the arguments as the kubelet expands them for raftlock-0.
	expanded := make([]string, len(args))
	for i, a := range args {
		expanded[i] = strings.NewReplacer("$(POD_NAME)", name+"-0", "$(NAMESPACE)", "default").Replace(a)
	}
	got := printConfig(t, nil, expanded...)
	if got["id"] != name+"-0" || got["data-dir"] != mount {
		t.Errorf("serve read id %v, data-dir %v from the manifest's args", got["id"], got["data-dir"])
	}
}

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The deployment files docs/scaling.md offers (deploy/): TestDeployFiles
// checks that they say what the page says — every server's arguments pass
// this binary's own flag parser, the store is PostgreSQL, each instance has
// a CLI config directory of its own, and the proxy keeps an MCP session on
// one instance.

type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Command     []string          `yaml:"command"`
		Volumes     []string          `yaml:"volumes"`
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
}

// serverFlags parses a server's arguments as main does, its environment
// (env, each variable to a stand-in value) applied; nil when they do not
// parse. The store's URL, which holds the database's password, comes from
// the environment, never the command line (which every process may read).
func serverFlags(t *testing.T, where string, args []string, env map[string]string) *config {
	t.Helper()
	for _, a := range args {
		if strings.HasPrefix(a, "--store") || strings.Contains(a, "postgres://") {
			t.Errorf("%s: the store's URL is on the command line (%q): put it in CLAUDE_AGENT_MCP_STORE", where, a)
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	c, _, err := parseFlags(args)
	if err != nil {
		t.Errorf("%s: the server's arguments %q do not parse: %v", where, args, err)
		return nil
	}
	if !strings.HasPrefix(c.store, "postgres://") {
		t.Errorf("%s: --store %q, want a postgres:// URL (a fleet shares nothing else)", where, c.store)
	}
	if c.http == "" || c.perUserConfigDir == "" || c.tokensFile == "" {
		t.Errorf("%s: want --http, --tokens-file and --per-user-config-dir; got %q", where, args)
	}
	return c
}

func TestDeployFiles(t *testing.T) {
	t.Setenv("CLAUDE_AGENT_MCP_STORE", "") // the files' flags alone
	dir := filepath.Join("..", "..", "deploy")
	t.Run("compose", func(t *testing.T) { checkCompose(t, dir) })
	t.Run("kubernetes", func(t *testing.T) { checkKubernetes(t, filepath.Join(dir, "kubernetes")) })
}

func checkCompose(t *testing.T, dir string) {
	data, err := os.ReadFile(filepath.Join(dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.Unmarshal(data, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	configVolume := map[string]string{} // volume → the service mounting it as its config directory
	var agents []string
	for name, s := range cf.Services {
		if !strings.HasPrefix(s.Image, "claude-agent-mcp") {
			continue
		}
		agents = append(agents, name)
		env := map[string]string{}
		for k, v := range s.Environment {
			env[k] = strings.ReplaceAll(v, "${STORE_URL}", "postgres://agent@db:5432/agents")
		}
		c := serverFlags(t, "compose.yaml service "+name, s.Command, env)
		if c == nil {
			continue
		}
		mounted := false
		for _, v := range s.Volumes {
			src, dst, _ := strings.Cut(v, ":")
			if strings.HasPrefix(c.perUserConfigDir, strings.TrimSuffix(dst, ":ro")+"/") {
				mounted = true
				if other, ok := configVolume[src]; ok {
					t.Errorf("compose.yaml: %s and %s share the CLI config volume %s: a fleet shares only the database", other, name, src)
				}
				configVolume[src] = name
			}
		}
		if !mounted {
			t.Errorf("compose.yaml: %s has no volume of its own for %s", name, c.perUserConfigDir)
		}
	}
	if len(agents) < 2 {
		t.Fatalf("compose.yaml has %d server services (%v), want at least two", len(agents), agents)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "haproxy.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stick match req.hdr(Mcp-Session-Id)", "stick store-response res.hdr(Mcp-Session-Id)", "balance hdr(Authorization)"} {
		if !bytes.Contains(cfg, []byte(want)) {
			t.Errorf("haproxy.cfg lacks %q", want)
		}
	}
	for _, a := range agents {
		if !regexp.MustCompile(`(?m)^\s*server \S+ ` + regexp.QuoteMeta(a) + `:8787\b`).Match(cfg) {
			t.Errorf("haproxy.cfg has no server line for %s:8787", a)
		}
	}
}

// k8sObject is what the check reads of a Kubernetes object.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name        string            `yaml:"name"`
		Annotations map[string]string `yaml:"annotations"`
	} `yaml:"metadata"`
	Spec struct {
		Replicas int              `yaml:"replicas"`
		Selector map[string]any   `yaml:"selector"` // a Service's labels; a Deployment's matchLabels
		Template k8sPodTemplate   `yaml:"template"`
		Rules    []k8sIngressRule `yaml:"rules"`
	} `yaml:"spec"`
}

type k8sPodTemplate struct {
	Metadata struct {
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Containers []struct {
			Args []string `yaml:"args"`
			Env  []struct {
				Name      string         `yaml:"name"`
				ValueFrom map[string]any `yaml:"valueFrom"`
			} `yaml:"env"`
			VolumeMounts []struct {
				Name      string `yaml:"name"`
				MountPath string `yaml:"mountPath"`
			} `yaml:"volumeMounts"`
		} `yaml:"containers"`
		Volumes []map[string]any `yaml:"volumes"`
	} `yaml:"spec"`
}

type k8sIngressRule struct {
	HTTP struct {
		Paths []struct {
			Backend struct {
				Service struct {
					Name string `yaml:"name"`
				} `yaml:"service"`
			} `yaml:"backend"`
		} `yaml:"paths"`
	} `yaml:"http"`
}

func readK8s(t *testing.T, dir string) map[string][]k8sObject {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", dir, err)
	}
	byKind := map[string][]k8sObject{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var o k8sObject
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			byKind[o.Kind] = append(byKind[o.Kind], o)
		}
	}
	return byKind
}

func checkKubernetes(t *testing.T, dir string) {
	byKind := readK8s(t, dir)
	if len(byKind["Deployment"]) != 1 || len(byKind["Service"]) != 1 || len(byKind["Ingress"]) != 1 {
		t.Fatalf("want a Deployment, a Service and an Ingress; got %d, %d, %d", len(byKind["Deployment"]), len(byKind["Service"]), len(byKind["Ingress"]))
	}
	d, svc, ing := byKind["Deployment"][0], byKind["Service"][0], byKind["Ingress"][0]
	if d.Spec.Replicas < 2 {
		t.Errorf("Deployment replicas %d, want at least 2", d.Spec.Replicas)
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment: %d containers, want 1", len(d.Spec.Template.Spec.Containers))
	}
	ct := d.Spec.Template.Spec.Containers[0]
	// The store's URL comes from a secret into the environment: here a
	// stand-in for the secret's value.
	env := map[string]string{}
	for _, e := range ct.Env {
		if e.Name == "CLAUDE_AGENT_MCP_STORE" {
			if _, ok := e.ValueFrom["secretKeyRef"]; !ok {
				t.Errorf("Deployment: CLAUDE_AGENT_MCP_STORE is not from a secret")
			}
			env[e.Name] = "postgres://agent@db:5432/agents"
		}
	}
	for _, a := range ct.Args {
		if strings.Contains(a, "$(") {
			t.Errorf("Deployment arg %q names a variable: a value from a secret goes in the environment, not on the command line", a)
		}
	}
	c := serverFlags(t, "Deployment", ct.Args, env)
	if c != nil {
		perPod := map[string]bool{}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if _, ok := v["emptyDir"]; ok {
				perPod[v["name"].(string)] = true
			}
		}
		mounted := false
		for _, m := range ct.VolumeMounts {
			if strings.HasPrefix(c.perUserConfigDir, m.MountPath+"/") && perPod[m.Name] {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("Deployment: %s is not on a volume of the pod's own (emptyDir)", c.perUserConfigDir)
		}
	}
	pods := d.Spec.Template.Metadata.Labels
	if len(svc.Spec.Selector) == 0 {
		t.Errorf("the Service selects nothing")
	}
	for k, v := range svc.Spec.Selector {
		if pods[k] != v {
			t.Errorf("the Service selects %s=%v, which the Deployment's pods (%v) do not have", k, v, pods)
		}
	}
	if h := ing.Metadata.Annotations["nginx.ingress.kubernetes.io/upstream-hash-by"]; h != "$http_authorization" {
		t.Errorf("Ingress upstream-hash-by %q, want $http_authorization (one user, one pod)", h)
	}
	if len(ing.Spec.Rules) == 0 || len(ing.Spec.Rules[0].HTTP.Paths) == 0 || ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name != svc.Metadata.Name {
		t.Errorf("Ingress does not route to the Service %s", svc.Metadata.Name)
	}
}

package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/e2eenv"
	"github.com/claude-agent-mcp/claude-agent-mcp/internal/testkit/mcptest"
)

// moduleFile is a file of the repository, by its path from the root.
func moduleFile(t *testing.T, rel string) string {
	t.Helper()
	root, err := e2eenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

// manifest is the part of a bundle's manifest.json the launch reads.
type manifest struct {
	Server struct {
		MCPConfig struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcp_config"`
	} `json:"server"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	UserConfig map[string]struct {
		Default any `json:"default"`
	} `json:"user_config"`
}

var userConfigRE = regexp.MustCompile(`\$\{user_config\.([a-z_]+)\}`)

// expand is what Claude Desktop does to a manifest string: ${__dirname}
// the bundle's directory, ${user_config.KEY} the value (here each key's
// default). It reports the keys it found that user_config lacks.
func (m manifest) expand(s, dir string) (string, []string) {
	var unknown []string
	s = strings.ReplaceAll(s, "${__dirname}", dir)
	s = userConfigRE.ReplaceAllStringFunc(s, func(ref string) string {
		key := userConfigRE.FindStringSubmatch(ref)[1]
		c, ok := m.UserConfig[key]
		if !ok {
			unknown = append(unknown, key)
			return ref
		}
		return fmt.Sprint(c.Default)
	})
	return s, unknown
}

// TestBundleLaunch makes the bundle of this platform from the built server
// and the real manifest template, unpacks it, and starts the server as
// the manifest says (its command, args and env, user_config at its
// defaults): it must answer initialize and tools/list with every tool the
// manifest names. Every ${user_config.KEY} must be declared, and every
// declared key used.
func TestBundleLaunch(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		t.Skipf("no Desktop bundle for %s", runtime.GOOS)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "build", exeName(runtime.GOOS))
	if out, err := exec.Command("go", "build", "-o", bin, moduleFile(t, "cmd/claude-agent-mcp")).CombinedOutput(); err != nil {
		t.Fatalf("building the server: %v\n%s", err, out)
	}
	path, err := writeBundle(bundleSpec{bin: bin, goos: runtime.GOOS, goarch: runtime.GOARCH, version: "v1.2.3",
		manifest: moduleFile(t, "packaging/mcpb/manifest.json"), license: moduleFile(t, "LICENSE"), out: tmp})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "unpacked")
	unzip(t, path, dir)
	var m manifest
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}

	var unknown []string
	command, u := m.expand(m.Server.MCPConfig.Command, dir)
	unknown = append(unknown, u...)
	cmd := exec.Command(command)
	for _, a := range m.Server.MCPConfig.Args {
		a, u := m.expand(a, dir)
		unknown = append(unknown, u...)
		cmd.Args = append(cmd.Args, a)
	}
	home := filepath.Join(tmp, "home")
	// The server's own settings come from the manifest alone; no warm
	// spare, so that no CLI starts.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CLAUDE_AGENT_MCP_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"), "CLAUDE_AGENT_MCP_WARM_SPARES=0")
	for k, v := range m.Server.MCPConfig.Env {
		v, u := m.expand(v, dir)
		unknown = append(unknown, u...)
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if len(unknown) > 0 {
		t.Errorf("the manifest uses user_config keys it does not declare: %v", unknown)
	}
	for key := range m.UserConfig {
		if !bytes.Contains(raw, []byte("${user_config."+key+"}")) {
			t.Errorf("user_config %q is declared but reaches no flag", key)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcptest.NewRecorder("desktop", nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, "")
	if err != nil {
		t.Fatalf("initialize of the server launched as the manifest says (%s %v): %v\nstderr:\n%s", command, cmd.Args[1:], err, stderr.String())
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var served []string
	for _, tool := range res.Tools {
		served = append(served, tool.Name)
	}
	for _, tool := range m.Tools {
		if !slices.Contains(served, tool.Name) {
			t.Errorf("the manifest names the tool %s, which the server does not serve (it serves %v)", tool.Name, served)
		}
	}
}

func unzip(t *testing.T, path, dir string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		_, err = b.ReadFrom(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b.Bytes(), f.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRenderManifestPerPlatform(t *testing.T) {
	tmpl, err := os.ReadFile(moduleFile(t, "packaging/mcpb/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	for goos, want := range map[string]string{"linux": "linux", "darwin": "darwin", "windows": "win32"} {
		out, entry, err := renderManifest(tmpl, goos, "v2.0.1")
		if err != nil {
			t.Fatalf("%s: %v", goos, err)
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatal(err)
		}
		server := m["server"].(map[string]any)
		command := server["mcp_config"].(map[string]any)["command"]
		platforms := m["compatibility"].(map[string]any)["platforms"].([]any)
		if m["version"] != "2.0.1" || server["entry_point"] != entry || command != "${__dirname}/"+entry ||
			len(platforms) != 1 || platforms[0] != want || strings.HasSuffix(entry, ".exe") != (goos == "windows") {
			t.Errorf("%s: version %v, entry_point %v (returned %s), command %v, platforms %v", goos, m["version"], server["entry_point"], entry, command, platforms)
		}
	}
	if _, _, err := renderManifest(tmpl, "plan9", "1.0.0"); err == nil {
		t.Error("a bundle for plan9 was rendered; Claude Desktop has none")
	}
}

// TestServerJSONSchema holds server.json to the registry's published
// schema, and the check to refusing what the schema refuses.
func TestServerJSONSchema(t *testing.T) {
	schema := moduleFile(t, "testdata/mcpregistry/server.schema.json")
	sum := strings.Repeat("ab", 32)
	s, err := makeServerJSON(map[string]string{"a.mcpb": sum, "a.tar.gz": sum}, []string{"a.tar.gz", "a.mcpb"}, "v1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Packages) != 1 || s.Packages[0].Identifier != repoURL+"/releases/download/v1.0.0/a.mcpb" || s.Version != "1.0.0" {
		t.Errorf("packages %+v, version %s: want the one bundle, downloaded from the release v1.0.0", s.Packages, s.Version)
	}
	good, _ := json.Marshal(s)
	if err := validateSchema(good, schema); err != nil {
		t.Fatalf("the release's server.json: %v", err)
	}
	for name, mutate := range map[string]func(*serverJSON){
		"name without a namespace": func(s *serverJSON) { s.Name = "claude-agent-mcp" },
		"short sha":                func(s *serverJSON) { s.Packages[0].FileSHA256 = "abc" },
		"description too long":     func(s *serverJSON) { s.Description = strings.Repeat("x", 101) },
		"version latest":           func(s *serverJSON) { s.Packages[0].Version = "latest" },
	} {
		bad := s
		bad.Packages = slices.Clone(s.Packages)
		mutate(&bad)
		b, _ := json.Marshal(bad)
		if err := validateSchema(b, schema); err == nil {
			t.Errorf("%s: valid against the schema", name)
		}
	}
	if _, err := makeServerJSON(map[string]string{"a.zip": sum}, []string{"a.zip"}, "1.0.0"); err == nil {
		t.Error("a server.json without a bundle was made")
	}
}

// TestCheckDist runs the check on a small release made here: it passes,
// then finds a wrong checksum, an archive without LICENSE and a cask that
// misses a download.
func TestCheckDist(t *testing.T) {
	dist := t.TempDir()
	const version = "1.0.0"
	var sums strings.Builder
	addSum := func(name string) {
		got, err := fileSHA256(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&sums, "%s  %s\n", got, name)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	cask := fmt.Sprintf("cask %q do\n  version %q\n", project, version)
	for _, tg := range targets {
		name := archiveName(version, tg)
		writeArchive(t, filepath.Join(dist, name), exeName(tg.goos), "README.md", "LICENSE")
		addSum(name)
		if err := os.WriteFile(bin, []byte("the binary for "+tg.goos+"/"+tg.goarch), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := writeBundle(bundleSpec{bin: bin, goos: tg.goos, goarch: tg.goarch, version: version,
			manifest: moduleFile(t, "packaging/mcpb/manifest.json"), out: dist}); err != nil {
			t.Fatal(err)
		}
		addSum(bundleName(version, tg.goos, tg.goarch))
		if tg.goos != "windows" {
			got, _ := fileSHA256(filepath.Join(dist, name))
			url := strings.Replace(name, version, "#{version}", 1)
			cask += fmt.Sprintf("  url \"%s/releases/download/v%s/%s\"\n  sha256 %q\n", repoURL, version, url, got)
		}
	}
	cask += fmt.Sprintf("  binary %q\nend\n", project)
	write := func(rel, content string) {
		p := filepath.Join(dist, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("checksums.txt", sums.String())
	write("homebrew/Casks/"+project+".rb", cask)
	if err := writeServerJSON(filepath.Join(dist, "checksums.txt"), version, filepath.Join(dist, "server.json")); err != nil {
		t.Fatal(err)
	}
	schema := moduleFile(t, "testdata/mcpregistry/server.schema.json")
	var out bytes.Buffer
	if err := checkDist(dist, version, schema, &out); err != nil {
		t.Fatalf("the check of a good release: %v", err)
	}
	if n := strings.Count(out.String(), "ok "); n != 2*len(targets)+2 {
		t.Errorf("%d artifacts checked, want %d:\n%s", n, 2*len(targets)+2, out.String())
	}

	linux := archiveName(version, targets[0])
	writeArchive(t, filepath.Join(dist, linux), project, "README.md")
	bundle := bundleName(version, "darwin", "arm64")
	good, _ := fileSHA256(filepath.Join(dist, bundle))
	write("checksums.txt", strings.Replace(sums.String(), good, strings.Repeat("0", 64), 1))
	write("homebrew/Casks/"+project+".rb", strings.Replace(cask, "darwin_arm64", "darwin_arm", 1))
	err := checkDist(dist, version, schema, &out)
	for _, want := range []string{linux + ": lacks LICENSE", bundle + ": its SHA-256", "no url of " + archiveName(version, target{"darwin", "arm64"})} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the check of a broken release does not say %q: %v", want, err)
		}
	}
}

// writeArchive writes a tar.gz or zip (by path) holding the named files.
func writeArchive(t *testing.T, path string, names ...string) {
	t.Helper()
	var b bytes.Buffer
	if strings.HasSuffix(path, ".zip") {
		zw := zip.NewWriter(&b)
		for _, n := range names {
			w, _ := zw.Create(n)
			w.Write([]byte(n))
		}
		zw.Close()
	} else {
		gz := gzip.NewWriter(&b)
		tw := tar.NewWriter(gz)
		for _, n := range names {
			tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(n))})
			tw.Write([]byte(n))
		}
		tw.Close()
		gz.Close()
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

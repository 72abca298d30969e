//go:build integration

// Package image_test builds the container image with scripts/build-image.sh
// (Buildah, amd64, an OCI layout) and checks what the chart will run: the
// stamped version and revision, the image's contents and configuration,
// the chart's rendered configs accepted inside the image, and the guard
// serving from it as 65532 with nothing writable.
package image_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kafka-disk-guard/kafka-disk-guard/e2e/e2etest"
	"github.com/kafka-disk-guard/kafka-disk-guard/internal/logdirgen"
)

// The files the image may hold, with their modes; directories on their
// paths are allowed (root-owned, 0755), nothing else.
var wantFiles = map[string]fs.FileMode{
	"etc/passwd":                        0o644,
	"etc/group":                         0o644,
	"etc/ssl/certs/ca-certificates.crt": 0o644,
	"usr/bin/kafka-disk-guard":          0o755,
}

const entrypoint = "/usr/bin/kafka-disk-guard"

type built struct {
	ref, version, revision string
	storage, oci           string
}

func TestImage(t *testing.T) {
	start := time.Now()
	chart := e2etest.ReadChart(t)
	b := buildImage(t)
	t.Logf("scripts/build-image.sh --arch amd64 --oci: %s in %s", b.ref, time.Since(start).Round(time.Second))

	t.Run("version from Chart.yaml appVersion, revision from git, image name from the chart", func(t *testing.T) {
		if b.version != chart.AppVersion {
			t.Errorf("script stamped version %q, Chart.yaml appVersion %q", b.version, chart.AppVersion)
		}
		if want := gitRevision(t); b.revision != want {
			t.Errorf("script stamped revision %q, git says %q", b.revision, want)
		}
		if got := chartImage(t); got != b.ref {
			t.Errorf("the chart runs %q by default, the script built %q", got, b.ref)
		}
	})

	img := readOCI(t, b.oci, chart.AppVersion)
	t.Logf("image size: %d bytes compressed (%d layer(s)), %d bytes unpacked; binary %d bytes",
		img.compressed, img.layers, img.unpacked, img.files["usr/bin/kafka-disk-guard"].size)

	t.Run("config: user 65532, entrypoint, OCI labels", func(t *testing.T) {
		c := img.config
		if c.Architecture != "amd64" || c.OS != "linux" {
			t.Errorf("platform %s/%s", c.OS, c.Architecture)
		}
		if c.Config.User != "65532:65532" {
			t.Errorf("user %q, want 65532:65532", c.Config.User)
		}
		if !slices.Equal(c.Config.Entrypoint, []string{entrypoint}) {
			t.Errorf("entrypoint %q", c.Config.Entrypoint)
		}
		for k, want := range map[string]string{
			"org.opencontainers.image.source":   chart.Home,
			"org.opencontainers.image.version":  chart.AppVersion,
			"org.opencontainers.image.revision": b.revision,
		} {
			if got := c.Config.Labels[k]; got != want {
				t.Errorf("label %s = %q, want %q", k, got, want)
			}
		}
		if c.Config.Labels["org.opencontainers.image.created"] == "" {
			t.Errorf("label org.opencontainers.image.created missing")
		}
		// The licence label names the repository's LICENSE.
		lic, err := os.ReadFile(filepath.Join(e2etest.Root(t), "LICENSE"))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Config.Labels["org.opencontainers.image.licenses"]; got != "Apache-2.0" || !strings.Contains(string(lic), "Apache License\n                           Version 2.0") {
			t.Errorf("label org.opencontainers.image.licenses = %q; want Apache-2.0, the licence in LICENSE", got)
		}
	})

	t.Run("contents: the binary, CA certificates, passwd and group, nothing else", func(t *testing.T) {
		checkContents(t, img)
	})

	ctr := fromImage(t, b)

	t.Run("version as 65532 prints the stamped version and revision", func(t *testing.T) {
		out := runIn(t, b, ctr, nil, "version")
		want := fmt.Sprintf("kafka-disk-guard %s %s", chart.AppVersion, b.revision)
		if strings.TrimSpace(out) != want {
			t.Errorf("version printed %q, want %q", out, want)
		}
	})

	t.Run("check-config accepts every config the chart renders", func(t *testing.T) {
		dir := t.TempDir()
		var files []string
		values, _ := filepath.Glob(filepath.Join(e2etest.Chart(t), "ci", "*-values.yaml"))
		if len(values) == 0 {
			t.Fatal("no values profiles in the chart's ci/")
		}
		for _, v := range values {
			name := strings.TrimSuffix(filepath.Base(v), "-values.yaml") + ".yaml"
			e2etest.WriteFile(t, dir, name, e2etest.RenderedConfig(t, e2etest.Template(t, "-f", v)))
			files = append(files, "/etc/kafka-disk-guard/"+name)
		}
		// Time zones other than UTC need zone data the image has no files
		// for: it is compiled into the binary.
		e2etest.WriteFile(t, dir, "timezone.yaml", "logDirs: [/var/lib/kafka/data]\nenforcer: {schedule: {time: \"03:30\", timezone: Europe/Madrid}}\n")
		files = append(files, "/etc/kafka-disk-guard/timezone.yaml")
		out := runIn(t, b, ctr, []string{dir + ":/etc/kafka-disk-guard:ro"}, append([]string{"check-config"}, files...)...)
		if n := strings.Count(out, ": ok: "); n != len(files) {
			t.Errorf("check-config accepted %d of %d files:\n%s", n, len(files), out)
		}
	})

	t.Run("run serves metrics as 65532 from a read-only log dir", func(t *testing.T) {
		checkServes(t, b, ctr, chart.AppVersion)
	})

	t.Run("the release workflow runs the suite, then this script", func(t *testing.T) {
		checkReleaseWorkflow(t)
	})
}

// checkReleaseWorkflow: .github/workflows/release.yml (which cannot run
// here) calls only scripts of the repository, with options they take, and
// runs the suite (.ci/run) before it builds and pushes the image.
func checkReleaseWorkflow(t *testing.T) {
	root := e2etest.Root(t)
	data, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("release.yml: %v", err)
	}
	help, err := exec.Command(filepath.Join(root, "scripts", "build-image.sh"), "--help").Output()
	if err != nil {
		t.Fatalf("build-image.sh --help: %v", err)
	}
	suite, image := -1, -1
	i := 0
	for _, job := range wf.Jobs {
		for _, st := range job.Steps {
			for _, line := range strings.Split(st.Run, "\n") {
				fields := strings.Fields(line)
				for j, f := range fields {
					f = strings.Trim(f, `"$()`)
					if !strings.HasPrefix(f, "scripts/") && !strings.HasPrefix(f, ".ci/") {
						continue
					}
					if fi, err := os.Stat(filepath.Join(root, f)); err != nil || fi.Mode()&0o111 == 0 {
						t.Errorf("release.yml runs %s: not an executable of the repository", f)
					}
					switch f {
					case ".ci/run":
						suite = i
					case "scripts/build-image.sh":
						image = i
						for _, opt := range fields[j+1:] {
							if strings.HasPrefix(opt, "--") && !bytes.Contains(help, []byte("  "+opt+" ")) {
								t.Errorf("release.yml passes %s to build-image.sh, which does not take it", opt)
							}
						}
						if !strings.Contains(line, "--arch all") || !strings.Contains(line, "--push") {
							t.Errorf("release.yml builds %q: want both architectures pushed", line)
						}
					}
				}
			}
			i++
		}
	}
	if suite < 0 || image < 0 || suite > image {
		t.Errorf("release.yml must run .ci/run (step %d) before scripts/build-image.sh (step %d)", suite, image)
	}
}

// buildImage runs the build script for amd64 into a private Buildah
// storage and an OCI layout, and parses its last line.
func buildImage(t *testing.T) built {
	t.Helper()
	if _, err := exec.LookPath("buildah"); err != nil {
		t.Fatal("buildah is not installed (Debian package buildah; .ci/run installs it)")
	}
	dir := t.TempDir()
	b := built{storage: filepath.Join(dir, "storage"), oci: filepath.Join(dir, "oci")}
	t.Cleanup(func() {
		// The storage holds mounts only while a container runs; remove
		// containers so nothing is left mounted before TempDir cleanup.
		_ = buildah(b, "rm", "--all").Run()
	})
	cmd := exec.Command(filepath.Join(e2etest.Root(t), "scripts", "build-image.sh"),
		"--arch", "amd64", "--storage-root", b.storage, "--oci", b.oci)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/build-image.sh: %v\n%s%s", err, out, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var arch string
	if _, err := fmt.Sscanf(lines[len(lines)-1], "image %s version %s revision %s arch %s", &b.ref, &b.version, &b.revision, &arch); err != nil || arch != "amd64" {
		t.Fatalf("build-image.sh's last line %q: %v", lines[len(lines)-1], err)
	}
	return b
}

func buildah(b built, args ...string) *exec.Cmd {
	return exec.Command("buildah", append([]string{"--storage-driver", "vfs",
		"--root", filepath.Join(b.storage, "root"), "--runroot", filepath.Join(b.storage, "run")}, args...)...)
}

func gitRevision(t *testing.T) string {
	t.Helper()
	root := e2etest.Root(t)
	rev, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse: %v", err)
	}
	st, err := exec.Command("git", "-C", root, "status", "--porcelain").Output()
	if err != nil {
		t.Fatalf("git status: %v", err)
	}
	r := strings.TrimSpace(string(rev))
	if len(bytes.TrimSpace(st)) > 0 {
		r += "-dirty"
	}
	return r
}

// chartImage is the image the chart's DaemonSet runs with default values.
func chartImage(t *testing.T) string {
	t.Helper()
	for _, o := range e2etest.Template(t) {
		if o.Kind != "DaemonSet" {
			continue
		}
		var spec struct {
			Template struct {
				Spec struct {
					Containers []struct{ Image string } `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		}
		if err := o.Spec.Decode(&spec); err != nil {
			t.Fatal(err)
		}
		if cs := spec.Template.Spec.Containers; len(cs) == 1 {
			return cs[0].Image
		}
	}
	t.Fatal("no DaemonSet with one container in the default render")
	return ""
}

// --- running the image ---------------------------------------------------

// fromImage creates a working container from the built image.
func fromImage(t *testing.T, b built) string {
	t.Helper()
	name := fmt.Sprintf("kdg-image-test-%d", os.Getpid())
	if out, err := buildah(b, "from", "--pull-never", "--name", name, b.ref).CombinedOutput(); err != nil {
		t.Fatalf("buildah from %s: %v\n%s", b.ref, err, out)
	}
	return name
}

// runCmd is `buildah run` of the image's entrypoint with args, as 65532.
func runCmd(b built, ctr string, volumes []string, args ...string) *exec.Cmd {
	argv := []string{"run", "--isolation", "chroot", "--user", "65532:65532"}
	for _, v := range volumes {
		argv = append(argv, "--volume", v)
	}
	argv = append(argv, ctr, "--", entrypoint)
	return buildah(b, append(argv, args...)...)
}

func runIn(t *testing.T, b built, ctr string, volumes []string, args ...string) string {
	t.Helper()
	out, err := runCmd(b, ctr, volumes, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("buildah run %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// checkServes runs the guard from the image (observe mode, offline) on a
// generated broker log dir mounted read-only, and reads /readyz and
// /metrics from the host. No directory of the image is writable by 65532
// (checkContents), so serving proves the guard needs no writable root
// filesystem.
func checkServes(t *testing.T, b built, ctr, version string) {
	logDir := filepath.Join(t.TempDir(), "data")
	if _, err := logdirgen.Generate(logDir, logdirgen.Spec{Now: time.Now(), Topics: []logdirgen.Topic{{Name: "orders", Partitions: 2,
		Segments: []logdirgen.Segment{{Bytes: 4096}, {Bytes: 4096}, {Bytes: 4096}}}}}); err != nil {
		t.Fatal(err)
	}
	cfgDir := t.TempDir()
	port := e2etest.FreePort(t)
	e2etest.WriteFile(t, cfgDir, "config.yaml", fmt.Sprintf("logDirs: [/var/lib/kafka/data]\nweb: {listenAddress: \"127.0.0.1:%d\"}\n", port))
	p := e2etest.Start(t, "guard-in-image", t.TempDir(), runCmd(b, ctr,
		[]string{cfgDir + ":/etc/kafka-disk-guard:ro", logDir + ":/var/lib/kafka/data:ro"},
		"run", "--config", "/etc/kafka-disk-guard/config.yaml").Args...)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var metrics string
	err := e2etest.Poll(ctx, 200*time.Millisecond, func() error {
		if done, err := p.Exited(); done {
			return fmt.Errorf("the guard exited: %v", err)
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz: %s", resp.Status)
		}
		resp, err = http.Get(base + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		metrics = string(body)
		return err
	})
	if err != nil {
		t.Fatalf("the guard in the image did not serve: %v\n%s", err, p.Tail(20))
	}
	for _, want := range []string{
		`kafka_disk_guard_build_info{goversion=`,
		fmt.Sprintf(`revision="%s",version="%s"} 1`, b.revision, version),
		`kafka_disk_guard_log_dir_usage_ratio{log_dir="/var/lib/kafka/data"}`,
		`kafka_disk_guard_segments{log_dir="/var/lib/kafka/data",state="closed",topic="orders"} 4`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	p.Stop()
	if out := p.Output(); strings.Contains(out, "read-only file system") || strings.Contains(out, "permission denied") {
		t.Errorf("the guard tried to write:\n%s", out)
	}
}

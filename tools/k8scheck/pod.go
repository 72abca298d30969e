package k8scheck

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// checkPodSpec checks the agent's pod (or, for a sidecar snippet, its
// container with external volumes that the Kafka pod provides).
func checkPodSpec(spec *corev1.PodSpec, configMaps map[string]*corev1.ConfigMap) []error {
	vols, errs := checkVolumes(spec)
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(spec.Containers) == 0 {
		fail("no containers")
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		for _, e := range checkContainer(c, true) {
			fail("container %q: %v", c.Name, e)
		}
		for _, e := range checkAgentConfig(c, vols, configMaps, true) {
			fail("container %q: %v", c.Name, e)
		}
	}
	return errs
}

// checkJob checks the uninstall hook: its one container runs
// `kafka-disk-guard protection lift --all` with the agent's config and
// Secret files, bounded in time. That it is a pre-delete hook which runs
// before the DaemonSet goes and is deleted once it succeeded, and that its
// pod passes Pod Security "restricted", is checked on a real control plane
// (tools/k8s/charttest).
func checkJob(j *batchv1.Job, configMaps map[string]*corev1.ConfigMap) []error {
	spec := &j.Spec.Template.Spec
	vols, errs := checkVolumes(spec)
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if j.Spec.ActiveDeadlineSeconds == nil || *j.Spec.ActiveDeadlineSeconds <= 0 {
		fail("no activeDeadlineSeconds: an uninstall could wait forever")
	}
	if len(spec.Containers) != 1 {
		return append(errs, fmt.Errorf("%d containers, want 1", len(spec.Containers)))
	}
	c := &spec.Containers[0]
	for _, e := range checkContainer(c, false) {
		fail("container %q: %v", c.Name, e)
	}
	for _, e := range checkAgentConfig(c, vols, configMaps, false) {
		fail("container %q: %v", c.Name, e)
	}
	if len(c.Args) < 3 || c.Args[0] != "protection" || c.Args[1] != "lift" || !argsHave(c.Args, "--all") {
		fail("container %q: args %v do not run protection lift --all", c.Name, c.Args)
	}
	return errs
}

// checkVolumes returns a pod's volumes by name and checks that host paths
// are absolute (the API server accepts a relative one).
func checkVolumes(spec *corev1.PodSpec) (map[string]corev1.Volume, []error) {
	var errs []error
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
		if hp := v.HostPath; hp != nil && !path.IsAbs(hp.Path) {
			errs = append(errs, fmt.Errorf("volume %q: hostPath %q is not absolute", v.Name, hp.Path))
		}
	}
	return vols, errs
}

// checkContainer checks what the API server does not: probes name a port
// of the container, mount paths are absolute. probes: it serves (the
// agent) and must have its liveness and readiness probes. The security
// context, resources, probe paths and read-only mounts are checked on the
// objects a real API server stored (tools/k8s/charttest).
func checkContainer(c *corev1.Container, probes bool) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for name, pr := range map[string]*corev1.Probe{"livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
		if !probes {
			break
		}
		switch {
		case pr == nil:
			fail("%s missing", name)
		case pr.HTTPGet == nil:
			fail("%s is not an httpGet probe", name)
		default:
			if pr.HTTPGet.Port.Type == intstr.String {
				if _, ok := ports[pr.HTTPGet.Port.StrVal]; !ok {
					fail("%s port %q is no container port", name, pr.HTTPGet.Port.StrVal)
				}
			}
		}
	}
	for _, m := range c.VolumeMounts {
		if !path.IsAbs(m.MountPath) {
			fail("mount %q: path %q not absolute", m.Name, m.MountPath)
		}
	}
	return errs
}

// agentConfig mirrors the agent's config file shape (see the chart's
// kdg.config template); decoded with unknown fields rejected.
type agentConfig struct {
	LogDirs       []string `yaml:"logDirs"`
	CapacityBytes int64    `yaml:"capacityBytes"`
	Kafka         *struct {
		BootstrapServers []string `yaml:"bootstrapServers"`
		SASL             *struct {
			Mechanism    string `yaml:"mechanism"`
			Username     string `yaml:"username"`
			PasswordFile string `yaml:"passwordFile"`
		} `yaml:"sasl"`
		TLS *struct {
			Enabled  bool   `yaml:"enabled"`
			CAFile   string `yaml:"caFile"`
			CertFile string `yaml:"certFile"`
			KeyFile  string `yaml:"keyFile"`
		} `yaml:"tls"`
	} `yaml:"kafka"`
	Enforcer struct {
		Enabled        bool   `yaml:"enabled"`
		Profile        string `yaml:"profile"`
		OwnershipTopic string `yaml:"ownershipTopic"`
		Protection     struct {
			Strategy                  string   `yaml:"strategy"`
			AllowEveryoneIfNoACLFound string   `yaml:"allowEveryoneIfNoAclFound"`
			ExemptPrincipals          []string `yaml:"exemptPrincipals"`
			ExemptTopics              []string `yaml:"exemptTopics"`
			LeaseDuration             string   `yaml:"leaseDuration"`
		} `yaml:"protection"`
		Purge struct {
			MaxPercentPerPass float64 `yaml:"maxPercentPerPass"`
			MaxPercentPerHour float64 `yaml:"maxPercentPerHour"`
			MaxPercentPerDay  float64 `yaml:"maxPercentPerDay"`
			FloorSegments     int     `yaml:"floorSegments"`
			FloorPercent      float64 `yaml:"floorPercent"`
			OtherBytesPercent float64 `yaml:"otherBytesPercent"`
		} `yaml:"purge"`
	} `yaml:"enforcer"`
	Admission struct {
		Enabled             bool    `yaml:"enabled"`
		LimitPercent        float64 `yaml:"limitPercent"`
		RefreshInterval     string  `yaml:"refreshInterval"`
		MaxModelAge         string  `yaml:"maxModelAge"`
		MaxConcurrentChecks int     `yaml:"maxConcurrentChecks"`
	} `yaml:"admission"`
	Web struct {
		ListenAddress      string `yaml:"listenAddress"`
		ConfigFile         string `yaml:"configFile"`
		ProbeListenAddress string `yaml:"probeListenAddress"`
	} `yaml:"web"`
	Metrics struct {
		PerPartition bool `yaml:"perPartition"`
	} `yaml:"metrics"`
}

// checkAgentConfig finds the config file the container mounts, decodes it
// strictly, and checks that every path it names is mounted: log dirs
// read-only, secret files present in the projected Secret volume.
func checkAgentConfig(c *corev1.Container, vols map[string]corev1.Volume, configMaps map[string]*corev1.ConfigMap, logDirsMounted bool) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	m := readMounts(c, vols, configMaps, fail)
	if !m.found {
		return append(errs, errors.New("mounts no config.yaml"))
	}
	var cfg agentConfig
	dec := yaml.NewDecoder(strings.NewReader(m.raw))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		return append(errs, fmt.Errorf("config.yaml: %w", err))
	}
	if !argsHave(c.Args, "--config=/etc/kafka-disk-guard/config.yaml") {
		fail("args %v do not pass --config=/etc/kafka-disk-guard/config.yaml", c.Args)
	}
	if len(cfg.LogDirs) == 0 {
		fail("config.yaml: no logDirs")
	}
	for _, d := range cfg.LogDirs {
		if !path.IsAbs(d) {
			fail("config.yaml: log dir %q is not absolute", d)
		}
		if logDirsMounted && !underAny(d, m.roDirs) {
			fail("config.yaml: log dir %q is not under a read-only mount", d)
		}
	}
	switch cfg.Enforcer.Profile {
	case "cloud", "local", "serverless":
	default:
		fail("config.yaml: enforcer.profile %q", cfg.Enforcer.Profile)
	}
	switch cfg.Enforcer.Protection.Strategy {
	case "acl", "quota":
	default:
		fail("config.yaml: enforcer.protection.strategy %q", cfg.Enforcer.Protection.Strategy)
	}
	checkKafkaFiles(cfg, m.files, fail)
	return errs
}

// agentMounts is what the agent container mounts: its config.yaml (raw,
// found), its read-only mount paths and the secret files projected.
type agentMounts struct {
	raw    string
	found  bool
	roDirs []string
	files  map[string]bool
}

// readMounts reads the container's mounts.
func readMounts(c *corev1.Container, vols map[string]corev1.Volume, configMaps map[string]*corev1.ConfigMap, fail func(string, ...any)) agentMounts {
	m := agentMounts{files: map[string]bool{}}
	for _, vm := range c.VolumeMounts {
		v, known := vols[vm.Name]
		if vm.ReadOnly {
			m.roDirs = append(m.roDirs, vm.MountPath)
		}
		if !known {
			continue
		}
		if v.ConfigMap != nil && vm.SubPath == "config.yaml" {
			cm, ok := configMaps[v.ConfigMap.Name]
			if !ok {
				fail("config map %q is not rendered", v.ConfigMap.Name)
				continue
			}
			m.raw, m.found = cm.Data["config.yaml"]
			if !m.found {
				fail("config map %q has no config.yaml", v.ConfigMap.Name)
			}
		}
		if p := v.Projected; p != nil {
			for _, s := range p.Sources {
				if s.Secret == nil {
					continue
				}
				for _, it := range s.Secret.Items {
					m.files[path.Join(vm.MountPath, it.Path)] = true
				}
			}
		}
	}
	return m
}

// checkKafkaFiles checks the kafka section: bootstrap servers, and the
// password and TLS files among the mounted secret files.
func checkKafkaFiles(cfg agentConfig, files map[string]bool, fail func(string, ...any)) {
	k := cfg.Kafka
	if k == nil {
		return
	}
	if len(k.BootstrapServers) == 0 {
		fail("config.yaml: kafka without bootstrapServers")
	}
	if k.SASL != nil && !files[k.SASL.PasswordFile] {
		fail("config.yaml: kafka.sasl.passwordFile %q is not a mounted secret file", k.SASL.PasswordFile)
	}
	if k.TLS != nil {
		for field, f := range map[string]string{"caFile": k.TLS.CAFile, "certFile": k.TLS.CertFile, "keyFile": k.TLS.KeyFile} {
			if f != "" && !files[f] {
				fail("config.yaml: kafka.tls.%s %q is not a mounted secret file", field, f)
			}
		}
		if (k.TLS.CertFile == "") != (k.TLS.KeyFile == "") {
			fail("config.yaml: kafka.tls.certFile and keyFile go together")
		}
	}
}

func argsHave(args []string, want string) bool {
	for _, a := range args {
		if a == want {
			return true
		}
	}
	return false
}

// checkSidecarSnippet decodes the snippet ConfigMap's lists strictly and
// checks the container as it will run inside the Kafka pod.
func checkSidecarSnippet(cm *corev1.ConfigMap, configMaps map[string]*corev1.ConfigMap) ([]podSource, []error) {
	var errs []error
	var containers []corev1.Container
	var volumes []corev1.Volume
	if err := StrictUnmarshal([]byte(cm.Data["sidecars.yaml"]), &containers); err != nil {
		errs = append(errs, fmt.Errorf("sidecars.yaml: %w", err))
	}
	if err := StrictUnmarshal([]byte(cm.Data["volumes.yaml"]), &volumes); err != nil {
		errs = append(errs, fmt.Errorf("volumes.yaml: %w", err))
	}
	type section struct {
		Sidecars     []corev1.Container `json:"sidecars"`
		ExtraVolumes []corev1.Volume    `json:"extraVolumes"`
	}
	var bitnami struct {
		Controller section `json:"controller"`
		Broker     section `json:"broker"`
	}
	if err := StrictUnmarshal([]byte(cm.Data["bitnami-values.yaml"]), &bitnami); err != nil {
		errs = append(errs, fmt.Errorf("bitnami-values.yaml: %w", err))
	}
	if len(containers) == 0 {
		return nil, append(errs, errors.New("sidecars.yaml: no container"))
	}
	for _, s := range []section{bitnami.Controller, bitnami.Broker} {
		if len(s.Sidecars) != len(containers) || len(s.ExtraVolumes) != len(volumes) {
			errs = append(errs, errors.New("bitnami-values.yaml differs from sidecars.yaml/volumes.yaml"))
		}
	}
	spec := corev1.PodSpec{Containers: containers, Volumes: volumes}
	errs = append(errs, checkPodSpec(&spec, configMaps)...)
	return []podSource{{containers: containers}}, errs
}

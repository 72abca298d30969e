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
	"k8s.io/apimachinery/pkg/util/validation"
)

// checkPodSpec checks the agent's pod (or, for a sidecar snippet, its
// container with external volumes that the Kafka pod provides).
func checkPodSpec(spec *corev1.PodSpec, external map[string]bool, configMaps map[string]*corev1.ConfigMap) []error {
	vols, errs := checkVolumes(spec)
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	psc := spec.SecurityContext
	if len(spec.Containers) == 0 {
		fail("no containers")
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		for _, e := range checkContainer(c, psc, vols, external, true) {
			fail("container %q: %v", c.Name, e)
		}
		for _, e := range checkAgentConfig(c, vols, configMaps, true) {
			fail("container %q: %v", c.Name, e)
		}
	}
	return errs
}

// checkJob checks the uninstall hook: a Helm pre-delete hook, deleted
// once it succeeded, whose one container runs `kafka-disk-guard
// protection lift --all` with the agent's config and Secret files, as
// locked down as the agent, never restarted in place, bounded in time.
func checkJob(j *batchv1.Job, configMaps map[string]*corev1.ConfigMap) []error {
	spec := &j.Spec.Template.Spec
	vols, errs := checkVolumes(spec)
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if j.Annotations["helm.sh/hook"] != "pre-delete" {
		fail("annotation helm.sh/hook %q, want pre-delete", j.Annotations["helm.sh/hook"])
	}
	if !strings.Contains(j.Annotations["helm.sh/hook-delete-policy"], "hook-succeeded") {
		fail("annotation helm.sh/hook-delete-policy %q does not delete the Job once it succeeded", j.Annotations["helm.sh/hook-delete-policy"])
	}
	if spec.RestartPolicy != corev1.RestartPolicyNever && spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		fail("restartPolicy %q, want Never or OnFailure", spec.RestartPolicy)
	}
	if j.Spec.ActiveDeadlineSeconds == nil || *j.Spec.ActiveDeadlineSeconds <= 0 {
		fail("no activeDeadlineSeconds: an uninstall could wait forever")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		fail("automountServiceAccountToken is not false")
	}
	if len(spec.Containers) != 1 {
		return append(errs, fmt.Errorf("%d containers, want 1", len(spec.Containers)))
	}
	c := &spec.Containers[0]
	for _, e := range checkContainer(c, spec.SecurityContext, vols, nil, false) {
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

// checkVolumes checks a pod's volumes and returns them by name.
func checkVolumes(spec *corev1.PodSpec) (map[string]corev1.Volume, []error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		for _, m := range validation.IsDNS1123Label(v.Name) {
			fail("volume %q: %s", v.Name, m)
		}
		if _, dup := vols[v.Name]; dup {
			fail("volume %q defined twice", v.Name)
		}
		vols[v.Name] = v
		if n := countSources(v.VolumeSource); n != 1 {
			fail("volume %q has %d sources, want 1", v.Name, n)
		}
		if hp := v.HostPath; hp != nil && !path.IsAbs(hp.Path) {
			fail("volume %q: hostPath %q is not absolute", v.Name, hp.Path)
		}
		if p := v.Projected; p != nil {
			for _, s := range p.Sources {
				if s.Secret != nil && s.Secret.Name == "" {
					fail("volume %q: projected secret without a name", v.Name)
				}
			}
		}
	}
	return vols, errs
}

func countSources(s corev1.VolumeSource) int {
	n := 0
	for _, set := range []bool{s.HostPath != nil, s.EmptyDir != nil, s.Secret != nil, s.ConfigMap != nil,
		s.Projected != nil, s.PersistentVolumeClaim != nil, s.DownwardAPI != nil, s.CSI != nil, s.Ephemeral != nil} {
		if set {
			n++
		}
	}
	return n
}

// checkContainer checks a container; probes: it serves (the agent) and
// must have its liveness and readiness probes.
func checkContainer(c *corev1.Container, psc *corev1.PodSecurityContext, vols map[string]corev1.Volume, external map[string]bool, probes bool) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, m := range validation.IsDNS1123Label(c.Name) {
		fail("name: %s", m)
	}
	if c.Image == "" {
		fail("no image")
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		for _, m := range validation.IsValidPortName(p.Name) {
			fail("port name %q: %s", p.Name, m)
		}
		for _, m := range validation.IsValidPortNum(int(p.ContainerPort)) {
			fail("port %q: %s", p.Name, m)
		}
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
	if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet.Path != "/healthz" {
		fail("livenessProbe path %q, want /healthz", c.LivenessProbe.HTTPGet.Path)
	}
	if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		fail("readinessProbe path %q, want /readyz", c.ReadinessProbe.HTTPGet.Path)
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okReq := c.Resources.Requests[res]
		lim, okLim := c.Resources.Limits[res]
		if !okReq {
			fail("no %s request", res)
		}
		if res == corev1.ResourceMemory && !okLim {
			fail("no memory limit")
		}
		if okReq && okLim && req.Cmp(lim) > 0 {
			fail("%s request %s above limit %s", res, req.String(), lim.String())
		}
	}
	// Security: non-root, read-only root filesystem, no privilege, no capabilities.
	sc := c.SecurityContext
	nonRoot := (sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) || (psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
	if !nonRoot {
		fail("runAsNonRoot is not true")
	}
	uid := (*int64)(nil)
	if psc != nil {
		uid = psc.RunAsUser
	}
	if sc != nil && sc.RunAsUser != nil {
		uid = sc.RunAsUser
	}
	if uid != nil && *uid == 0 {
		fail("runs as uid 0")
	}
	if sc == nil {
		fail("no securityContext")
	} else {
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			fail("readOnlyRootFilesystem is not true")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			fail("allowPrivilegeEscalation is not false")
		}
		if sc.Privileged != nil && *sc.Privileged {
			fail("privileged")
		}
		if sc.Capabilities == nil || !containsCap(sc.Capabilities.Drop, "ALL") {
			fail("capabilities do not drop ALL")
		} else if len(sc.Capabilities.Add) > 0 {
			fail("adds capabilities %v", sc.Capabilities.Add)
		}
	}
	seen := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if !path.IsAbs(m.MountPath) {
			fail("mount %q: path %q not absolute", m.Name, m.MountPath)
		}
		if seen[m.MountPath] {
			fail("mount path %q used twice", m.MountPath)
		}
		seen[m.MountPath] = true
		v, ok := vols[m.Name]
		if !ok && !external[m.Name] {
			fail("mount %q: no such volume", m.Name)
		}
		if m.MountPropagation != nil && *m.MountPropagation == corev1.MountPropagationBidirectional {
			fail("mount %q: Bidirectional propagation needs a privileged container", m.Name)
		}
		// Broker data is only ever read: host paths and external (Kafka pod)
		// volumes must be mounted read-only.
		if (v.HostPath != nil || external[m.Name]) && !m.ReadOnly {
			fail("mount %q of broker data is not readOnly", m.Name)
		}
	}
	return errs
}

func containsCap(cs []corev1.Capability, want corev1.Capability) bool {
	for _, c := range cs {
		if c == want {
			return true
		}
	}
	return false
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
	var raw string
	found := false
	var roDirs []string
	files := map[string]bool{}
	for _, m := range c.VolumeMounts {
		v, known := vols[m.Name]
		if m.ReadOnly {
			roDirs = append(roDirs, m.MountPath)
		}
		if !known {
			continue
		}
		if v.ConfigMap != nil && m.SubPath == "config.yaml" {
			cm, ok := configMaps[v.ConfigMap.Name]
			if !ok {
				fail("config map %q is not rendered", v.ConfigMap.Name)
				continue
			}
			raw, found = cm.Data["config.yaml"]
			if !found {
				fail("config map %q has no config.yaml", v.ConfigMap.Name)
			}
		}
		if p := v.Projected; p != nil {
			for _, s := range p.Sources {
				if s.Secret == nil {
					continue
				}
				for _, it := range s.Secret.Items {
					files[path.Join(m.MountPath, it.Path)] = true
				}
			}
		}
	}
	if !found {
		return append(errs, errors.New("mounts no config.yaml"))
	}
	var cfg agentConfig
	dec := yaml.NewDecoder(strings.NewReader(raw))
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
		if logDirsMounted && !underAny(d, roDirs) {
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
	if k := cfg.Kafka; k != nil {
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
	return errs
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
	// Mounts of volumes the snippet does not define come from the Kafka pod.
	defined := map[string]bool{}
	for _, v := range volumes {
		defined[v.Name] = true
	}
	external := map[string]bool{}
	for _, c := range containers {
		for _, m := range c.VolumeMounts {
			if !defined[m.Name] {
				external[m.Name] = true
			}
		}
	}
	spec := corev1.PodSpec{Containers: containers, Volumes: volumes}
	errs = append(errs, checkPodSpec(&spec, external, configMaps)...)
	return []podSource{{containers: containers}}, errs
}

{{/* Chart name, truncated to 63 characters. */}}
{{- define "kdg.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Fully qualified app name. */}}
{{- define "kdg.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kdg.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kdg.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kdg.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kdg.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kafka-disk-guard
{{- end -}}

{{- define "kdg.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kdg.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kdg.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The chart's own Secret for SASL/TLS material (when not using existing ones). */}}
{{- define "kdg.secretName" -}}
{{- printf "%s-kafka" (include "kdg.fullname" .) -}}
{{- end -}}

{{- define "kdg.saslSecret" -}}
{{- if .Values.kafka.sasl.enabled -}}{{- default (include "kdg.secretName" .) .Values.kafka.sasl.existingSecret -}}{{- end -}}
{{- end -}}

{{- define "kdg.tlsSecret" -}}
{{- if .Values.kafka.tls.enabled -}}
{{- if .Values.kafka.tls.existingSecret -}}{{- .Values.kafka.tls.existingSecret -}}
{{- else if .Values.kafka.tls.ca -}}{{- include "kdg.secretName" . -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Whether the chart renders its own Secret. */}}
{{- define "kdg.ownSecret" -}}
{{- if or (and .Values.kafka.sasl.enabled (not .Values.kafka.sasl.existingSecret)) (and .Values.kafka.tls.enabled .Values.kafka.tls.ca (not .Values.kafka.tls.existingSecret)) -}}true{{- end -}}
{{- end -}}

{{/* Secret with a client certificate for mutual TLS (e.g. Strimzi's KafkaUser with tls authentication). */}}
{{- define "kdg.clientCertSecret" -}}
{{- if .Values.kafka.tls.enabled -}}{{- .Values.kafka.tls.clientCert.existingSecret -}}{{- end -}}
{{- end -}}

{{- define "kdg.needsSecret" -}}
{{- if or (include "kdg.saslSecret" .) (include "kdg.tlsSecret" .) (include "kdg.clientCertSecret" .) -}}true{{- end -}}
{{- end -}}

{{/* Port name: sidecar ports must not clash with the Kafka container's. */}}
{{- define "kdg.portName" -}}
{{- if eq .Values.mode "sidecar" -}}kdg-metrics{{- else -}}http-metrics{{- end -}}
{{- end -}}

{{/* The probes' port: the probe listener's (plain HTTP, no credentials)
     when the web config may require TLS or basic auth, else the web port. */}}
{{- define "kdg.probePortName" -}}
{{- if .Values.web.configSecret -}}
{{- if eq .Values.mode "sidecar" -}}kdg-probes{{- else -}}probes{{- end -}}
{{- else -}}
{{- include "kdg.portName" . -}}
{{- end -}}
{{- end -}}

{{- define "kdg.probeScheme" -}}
{{- if .Values.web.configSecret -}}HTTP{{- else -}}{{ .Values.web.scheme }}{{- end -}}
{{- end -}}

{{/* Log dir globs of the kubeletPods presets. */}}
{{- define "kdg.kubeletPodsGlobs" -}}
{{- $k := .Values.dataLayout.kubeletPods -}}
{{- $root := trimSuffix "/" $k.path -}}
{{- if $k.logDirGlobs -}}
{{- toYaml $k.logDirGlobs -}}
{{- else if eq $k.preset "strimzi" -}}
- {{ printf "%s/*/volumes/*/*/kafka-log*" $root }}
- {{ printf "%s/*/volumes/kubernetes.io~csi/*/mount/kafka-log*" $root }}
{{- else if eq $k.preset "bitnami" -}}
- {{ printf "%s/*/volumes/*/*/data" $root }}
- {{ printf "%s/*/volumes/kubernetes.io~csi/*/mount/data" $root }}
{{- else -}}
{{- fail "dataLayout.kubeletPods.preset is custom: set dataLayout.kubeletPods.logDirGlobs" -}}
{{- end -}}
{{- end -}}

{{/* The log dirs written to the agent config. */}}
{{- define "kdg.logDirs" -}}
{{- if .Values.config.logDirs -}}
{{- toYaml .Values.config.logDirs -}}
{{- else if eq .Values.mode "sidecar" -}}
{{- toYaml .Values.sidecar.logDirs -}}
{{- else if eq .Values.dataLayout.type "kubeletPods" -}}
{{- include "kdg.kubeletPodsGlobs" . -}}
{{- else -}}
{{- toYaml .Values.dataLayout.hostPath.paths -}}
{{- end -}}
{{- end -}}

{{/* The agent's config file. */}}
{{- define "kdg.config" -}}
{{- $cfg := dict "logDirs" (include "kdg.logDirs" . | fromYamlArray) "capacityBytes" (int64 .Values.config.capacityBytes) -}}
{{- if .Values.kafka.bootstrapServers -}}
{{- $kafka := dict "bootstrapServers" .Values.kafka.bootstrapServers -}}
{{- if .Values.kafka.sasl.enabled -}}
{{- $_ := set $kafka "sasl" (dict "mechanism" .Values.kafka.sasl.mechanism "username" .Values.kafka.sasl.username "passwordFile" "/etc/kafka-disk-guard/secrets/sasl-password") -}}
{{- end -}}
{{- $tls := dict "enabled" .Values.kafka.tls.enabled -}}
{{- if include "kdg.tlsSecret" . -}}
{{- $_ := set $tls "caFile" "/etc/kafka-disk-guard/secrets/ca.crt" -}}
{{- end -}}
{{- if include "kdg.clientCertSecret" . -}}
{{- $_ := set $tls "certFile" "/etc/kafka-disk-guard/secrets/tls.crt" -}}
{{- $_ := set $tls "keyFile" "/etc/kafka-disk-guard/secrets/tls.key" -}}
{{- end -}}
{{- $_ := set $kafka "tls" $tls -}}
{{- $_ := set $cfg "kafka" $kafka -}}
{{- end -}}
{{- $prot := dict "strategy" .Values.enforcer.protection.strategy "allowEveryoneIfNoAclFound" .Values.enforcer.protection.allowEveryoneIfNoAclFound -}}
{{- with .Values.enforcer.protection.exemptPrincipals }}{{ $_ := set $prot "exemptPrincipals" . }}{{ end -}}
{{- with .Values.enforcer.protection.exemptTopics }}{{ $_ := set $prot "exemptTopics" . }}{{ end -}}
{{- with .Values.enforcer.protection.leaseDuration }}{{ $_ := set $prot "leaseDuration" . }}{{ end -}}
{{- $enforcer := dict "enabled" .Values.enforcer.enabled "profile" .Values.enforcer.profile "protection" $prot -}}
{{- with .Values.enforcer.purge }}{{ $_ := set $enforcer "purge" . }}{{ end -}}
{{- with .Values.enforcer.relief }}{{ $_ := set $enforcer "relief" . }}{{ end -}}
{{- with .Values.enforcer.ownershipTopic }}{{ $_ := set $enforcer "ownershipTopic" . }}{{ end -}}
{{- $_ := set $cfg "enforcer" $enforcer -}}
{{- $web := dict "listenAddress" (printf ":%d" (int .Values.web.port)) -}}
{{- if .Values.web.configSecret -}}
{{- $_ := set $web "probeListenAddress" (printf ":%d" (int .Values.web.probePort)) -}}
{{- end -}}
{{- $_ := set $cfg "web" $web -}}
{{- $_ := set $cfg "admission" (dict "enabled" .Values.admission.enabled "limitPercent" .Values.admission.limitPercent) -}}
{{- $_ := set $cfg "metrics" (dict "perPartition" .Values.config.metrics.perPartition) -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* The agent container, shared by the DaemonSet and the sidecar snippet.
     The caller passes (dict "root" $ "mounts" <list of extra volumeMounts>). */}}
{{- define "kdg.container" -}}
{{- $ := .root -}}
name: kafka-disk-guard
image: {{ include "kdg.image" $ }}
imagePullPolicy: {{ $.Values.image.pullPolicy }}
args:
  - run
  - --config=/etc/kafka-disk-guard/config.yaml
  {{- if $.Values.web.configSecret }}
  - --web.config.file=/etc/kafka-disk-guard/web/web-config.yml
  {{- end }}
  {{- with $.Values.extraArgs }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with $.Values.extraEnv }}
env:
  {{- toYaml . | nindent 2 }}
{{- end }}
ports:
  - name: {{ include "kdg.portName" $ }}
    containerPort: {{ $.Values.web.port }}
    protocol: TCP
  {{- if $.Values.web.configSecret }}
  - name: {{ include "kdg.probePortName" $ }}
    containerPort: {{ $.Values.web.probePort }}
    protocol: TCP
  {{- end }}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ include "kdg.probePortName" $ }}
    scheme: {{ include "kdg.probeScheme" $ }}
  {{- toYaml $.Values.livenessProbe | nindent 2 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ include "kdg.probePortName" $ }}
    scheme: {{ include "kdg.probeScheme" $ }}
  {{- toYaml $.Values.readinessProbe | nindent 2 }}
resources:
  {{- toYaml $.Values.resources | nindent 2 }}
securityContext:
  {{- if eq $.Values.mode "sidecar" }}
  {{- /* the Kafka pod's securityContext is not ours: carry user and group here */}}
  {{- $sc := deepCopy $.Values.securityContext }}
  {{- range $k := list "runAsUser" "runAsGroup" "seccompProfile" }}
  {{- if hasKey $.Values.podSecurityContext $k }}
  {{- $_ := set $sc $k (get $.Values.podSecurityContext $k) }}
  {{- end }}
  {{- end }}
  {{- toYaml $sc | nindent 2 }}
  {{- else }}
  {{- toYaml $.Values.securityContext | nindent 2 }}
  {{- end }}
volumeMounts:
  - name: kdg-config
    mountPath: /etc/kafka-disk-guard/config.yaml
    subPath: config.yaml
    readOnly: true
  {{- if include "kdg.needsSecret" $ }}
  - name: kdg-secrets
    mountPath: /etc/kafka-disk-guard/secrets
    readOnly: true
  {{- end }}
  {{- if $.Values.web.configSecret }}
  - name: kdg-web
    mountPath: /etc/kafka-disk-guard/web
    readOnly: true
  {{- end }}
  {{- with .mounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/* Volumes for the config and secrets, shared by the DaemonSet and the sidecar snippet. */}}
{{- define "kdg.configVolumes" -}}
- name: kdg-config
  configMap:
    name: {{ include "kdg.fullname" . }}
{{- if include "kdg.needsSecret" . }}
- name: kdg-secrets
  projected:
    defaultMode: {{ include "kdg.secretMode" . }}
    sources:
      {{- with include "kdg.saslSecret" . }}
      - secret:
          name: {{ . }}
          items:
            - key: {{ $.Values.kafka.sasl.passwordKey }}
              path: sasl-password
      {{- end }}
      {{- with include "kdg.tlsSecret" . }}
      - secret:
          name: {{ . }}
          items:
            - key: {{ $.Values.kafka.tls.caKey }}
              path: ca.crt
      {{- end }}
      {{- with include "kdg.clientCertSecret" . }}
      - secret:
          name: {{ . }}
          items:
            - key: {{ $.Values.kafka.tls.clientCert.certKey }}
              path: tls.crt
            - key: {{ $.Values.kafka.tls.clientCert.keyKey }}
              path: tls.key
      {{- end }}
{{- end }}
{{- if .Values.web.configSecret }}
- name: kdg-web
  secret:
    secretName: {{ .Values.web.configSecret }}
    defaultMode: {{ include "kdg.secretMode" . }}
{{- end }}
{{- end -}}

{{/* Relabelings common to the ServiceMonitor and PodMonitor. */}}
{{- define "kdg.relabelings" -}}
- action: replace
  targetLabel: job
  replacement: kafka-disk-guard
{{- if eq .Values.mode "sidecar" }}
- action: replace
  sourceLabels: [__meta_kubernetes_pod_name]
  targetLabel: instance
{{- else }}
- action: replace
  sourceLabels: [__meta_kubernetes_pod_node_name]
  targetLabel: instance
{{- end }}
- action: replace
  sourceLabels: [__meta_kubernetes_pod_node_name]
  targetLabel: node
{{- with .Values.clusterName }}
- action: replace
  targetLabel: cluster
  replacement: {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Secret file mode: 0440 (decimal 288) with the DaemonSet's fsGroup; 0444
     (292) in a sidecar, whose pod's fsGroup is the Kafka chart's. */}}
{{- define "kdg.secretMode" -}}
{{- if eq .Values.mode "sidecar" -}}292{{- else -}}288{{- end -}}
{{- end -}}

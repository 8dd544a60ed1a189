{{/*
Names. fullname is the release's name, with "-<name>" added unless the release's name
already contains it (a release "ssebench" gives "ssebench", "eval" gives "eval-ssebench").
Every object is "<fullname>-<part>", cut to the 63 characters of a DNS label.
*/}}
{{- define "ssebench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "ssebench.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := include "ssebench.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* "<fullname>-<part>": call with (list $ "part"). */}}
{{- define "ssebench.part" -}}
{{- printf "%s-%s" (include "ssebench.fullname" (index . 0)) (index . 1) }}
{{- end }}

{{- define "ssebench.authSecret" -}}
{{- .Values.auth.existingSecret | default (include "ssebench.part" (list . "auth")) }}
{{- end }}

{{- define "ssebench.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "ssebench.fullname" .) }}
{{- end }}

{{- define "ssebench.runsNamespace" -}}
{{- .Values.runs.namespace | default .Release.Namespace }}
{{- end }}

{{/*
Labels of a part: call with (list $ "part"). app.kubernetes.io/name is the part, so the
proxy's pods carry app.kubernetes.io/name=litellm, which is what the run pods' policies
select (SSEBENCH_K8S_PROXY_SELECTOR), together with the instance.
*/}}
{{- define "ssebench.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ index . 1 }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
{{- end }}

{{- define "ssebench.labels" -}}
{{- $root := index . 0 -}}
{{ include "ssebench.selectorLabels" . }}
app.kubernetes.io/part-of: {{ include "ssebench.name" $root }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
An image of the chart: call with (list $ .Values.<part>.image). A tag with a digest
("1.0.0@sha256:...") is written as name:1.0.0@sha256:..., which pins it.
*/}}
{{- define "ssebench.image" -}}
{{- $root := index . 0 -}}
{{- $image := index . 1 -}}
{{- $tag := $image.tag | default $root.Values.image.tag | default $root.Chart.AppVersion -}}
{{- printf "%s/%s:%s" (trimSuffix "/" $root.Values.image.registry) $image.name $tag }}
{{- end }}

{{/* The pod-level settings every pod of the chart shares: scheduling, pull Secrets. */}}
{{- define "ssebench.podScheduling" -}}
{{- with .Values.image.pullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- with .Values.nodeSelector }}
nodeSelector:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "ssebench.podAnnotations" -}}
{{- with .Values.podAnnotations }}
annotations:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
A container that has no need of any capability or of a privilege gain. Root or not is
the caller's: call with (dict "root" true|false "uid" N "readOnly" true|false).
*/}}
{{- define "ssebench.containerSecurity" -}}
securityContext:
  privileged: false
  allowPrivilegeEscalation: false
  capabilities:
    drop: [ALL]
  seccompProfile:
    type: RuntimeDefault
  {{- if .root }}
  runAsUser: 0
  {{- else }}
  runAsNonRoot: true
  runAsUser: {{ .uid }}
  runAsGroup: {{ .uid }}
  {{- end }}
  readOnlyRootFilesystem: {{ .readOnly }}
{{- end }}

{{- define "ssebench.proxyURL" -}}
{{- printf "http://%s.%s.svc:4000" (include "ssebench.part" (list . "litellm")) .Release.Namespace }}
{{- end }}

{{- define "ssebench.catalogURL" -}}
{{- printf "http://%s.%s.svc:8080" (include "ssebench.part" (list . "catalog")) .Release.Namespace }}
{{- end }}

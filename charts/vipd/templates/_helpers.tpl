{{/* The image reference: repository@digest, or repository:tag (the chart's appVersion). */}}
{{- define "vipd.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* vipd.yaml: the shipped one with .Values.config merged over it. */}}
{{- define "vipd.config" -}}
{{- $shipped := .Files.Get "files/vipd.yaml" | fromYaml -}}
{{- if not .Values.kubernetes.enabled -}}
{{- /* No service account to link with (kube.yaml renders none): the link off, said so. */ -}}
{{- $_ := set $shipped "kubernetes" (dict "enabled" false) -}}
{{- end -}}
{{- mergeOverwrite $shipped (deepCopy .Values.config) | toYaml -}}
{{- end -}}

{{/* The ConfigMap's name carries a hash of its content, as kustomize's configMapGenerator
     names it: a config change is a new pod template, so it rolls out node by node. */}}
{{- define "vipd.configMapName" -}}
vipd-config-{{ include "vipd.config" . | sha256sum | trunc 10 }}
{{- end -}}

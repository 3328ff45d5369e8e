{{/* Name of the release's objects: the release name, with "tollgate" unless it holds it already. */}}
{{- define "tollgate.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tollgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component (admin or gateway): pass (list $ "admin"). */}}
{{- define "tollgate.selector" -}}
app.kubernetes.io/name: {{ (index . 0).Chart.Name }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "tollgate.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "tollgate.secretName" -}}
{{- .Values.existingSecret | default (printf "%s-secrets" (include "tollgate.fullname" .)) -}}
{{- end -}}

{{/* The environment every node shares: Redis, the secrets (envFrom), the common env. */}}
{{- define "tollgate.env" -}}
- name: TOLLGATE_REDIS_URL
  value: {{ required "redisURL is required: the limiter Redis" .Values.redisURL | quote }}
{{- with .Values.cacheRedisURL }}
- name: TOLLGATE_CACHE_REDIS_URL
  value: {{ . | quote }}
{{- end }}
- name: TOLLGATE_SHUTDOWN_TIMEOUT
  value: {{ printf "%ds" (int .Values.shutdownTimeoutSeconds) | quote }}
{{- range $k, $v := .Values.env }}
- name: {{ $k }}
  value: {{ $v | toString | quote }}
{{- end }}
{{- end -}}

{{- define "tollgate.pod" -}}
{{- $root := index . 0 -}}
{{- $component := index . 1 -}}
{{- $values := index $root.Values $component -}}
terminationGracePeriodSeconds: {{ add (int $root.Values.shutdownTimeoutSeconds) 10 }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml $root.Values.podSecurityContext | nindent 2 }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

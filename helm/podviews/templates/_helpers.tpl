{{- define "podviews.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "podviews.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "podviews.secretName" -}}
{{- default (printf "%s-secret" (include "podviews.fullname" .)) .Values.existingSecret -}}
{{- end -}}

{{- define "podviews.databaseUrl" -}}
{{- if .Values.postgresql.bundled -}}
{{- printf "postgresql://%s:%s@%s-postgres:5432/%s" .Values.postgresql.user .Values.postgresql.password (include "podviews.fullname" .) .Values.postgresql.database -}}
{{- else -}}
{{- required "postgresql.externalUrl is required when postgresql.bundled is false" .Values.postgresql.externalUrl -}}
{{- end -}}
{{- end -}}

{{- define "podviews.env" -}}
envFrom:
  - configMapRef:
      name: {{ include "podviews.fullname" . }}-config
env:
  - name: PODVIEWS_ADMIN_TOKEN
    valueFrom:
      secretKeyRef:
        name: {{ include "podviews.secretName" . }}
        key: admin-token
  - name: PODVIEWS_DATABASE_URL
    valueFrom:
      secretKeyRef:
        name: {{ include "podviews.fullname" . }}-secret
        key: database-url
{{- end -}}

{{- /* A pod template's annotation: a change of the settings rolls its pods. */ -}}
{{- define "podviews.configChecksum" -}}
checksum/config: {{ include (print .Template.BasePath "/config.yaml") . | sha256sum }}
{{- end -}}

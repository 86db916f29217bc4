{{/* The name of most objects: the release name, with the chart's name added unless it already holds it. */}}
{{- define "tfop.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels that select the operator's pods; also on every object, so one selector finds the release. */}}
{{- define "tfop.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tfop.labels" -}}
{{ include "tfop.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
Whether to render an object of an API the cluster may lack: (list enabled $ "group/version/Kind"). enabled is
true (always), false (never) or "auto" (when the cluster serves that API: helm install and upgrade know; for
helm template, pass --api-versions group/version/Kind). Empty output means no.
*/}}
{{- define "tfop.wanted" -}}
{{- $enabled := index . 0 -}}{{- $root := index . 1 -}}{{- $api := index . 2 -}}
{{- if eq (toString $enabled) "auto" -}}
{{- if $root.Capabilities.APIVersions.Has $api }}yes{{ end -}}
{{- else if $enabled -}}yes{{- end -}}
{{- end -}}

{{/* host:port for a --*-addr flag: an IPv6 address gets its brackets, an empty host means every address. */}}
{{- define "tfop.listenAddress" -}}
{{- $host := index . 0 -}}{{- $port := index . 1 -}}
{{- if and (contains ":" $host) (not (hasPrefix "[" $host)) -}}
[{{ $host }}]:{{ $port }}
{{- else -}}
{{ $host }}:{{ $port }}
{{- end -}}
{{- end -}}

{{- define "tfop.leaseName" -}}
{{- .Values.leaderElection.leaseName | default (printf "%s-leader" (include "tfop.fullname" .)) -}}
{{- end -}}

{{/*
What the operator does on the API in the namespaces it manages, and nothing more (tfop/controller/reconciler.py
and tfop/kube/): it watches TFJobs and writes their status, deletes finished ones after
ttlSecondsAfterFinished, creates and deletes the Pods, Services, Jobs and (on request) NetworkPolicy of each job,
and records Events.
*/}}
{{- define "tfop.operatorRules" -}}
- apiGroups: [kubeflow.org]
  resources: [tfjobs]
  verbs: [get, list, watch, delete]
{{- if .Values.capacityScaling.enabled }}
# The capacity auto-scaler writes an elastic job's Worker count, with its reason as an annotation.
- apiGroups: [kubeflow.org]
  resources: [tfjobs]
  verbs: [patch]
{{- end }}
# create only as a dry run at start (tfop/kueue_startup.py), nothing stored: whether Kueue's TFJob adapter is
# enabled (its webhook suspends a TFJob that names a queue), which tfop's own Kueue integration must not meet.
- apiGroups: [kubeflow.org]
  resources: [tfjobs]
  verbs: [create]
# The status is written with PUT; patch grants nothing update does not.
- apiGroups: [kubeflow.org]
  resources: [tfjobs/status]
  verbs: [update, patch]
# Children carry ownerReferences with blockOwnerDeletion, which clusters running the
# OwnerReferencesPermissionEnforcement admission plugin (OpenShift, for one) allow only with this.
- apiGroups: [kubeflow.org]
  resources: [tfjobs/finalizers]
  verbs: [update]
# Services are patched too: a job's TensorBoard Service brought back in line (tfop.kubeflow.org/tensorboard).
- apiGroups: [""]
  resources: [services]
  verbs: [list, watch, create, patch, delete]
# Pods are patched too: tfop's finalizer removed once the job's status records how the replica ended.
- apiGroups: [""]
  resources: [pods]
  verbs: [list, watch, create, patch, delete]
# The Job backend (a job's replicas as batch/v1 Jobs, per operator or per job): patched to suspend and resume.
- apiGroups: [batch]
  resources: [jobs]
  verbs: [list, watch, create, patch, delete]
# BEGIN a job's own children: `make rbac` writes these from their table; do not edit by hand.
# A job's own NetworkPolicy, as tfop/controller/plan/children/network_policy.py declares it
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [list, watch, create, patch, delete]
# A job's own HorizontalPodAutoscaler, as tfop/controller/plan/children/autoscaler.py declares it
- apiGroups: [autoscaling]
  resources: [horizontalpodautoscalers]
  verbs: [list, watch, create, patch, delete]
# A job's own PodDisruptionBudget, as tfop/controller/plan/children/disruption_budget.py declares it
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [list, watch, create, patch, delete]
# A job's own TensorBoard, as tfop/controller/plan/children/tensorboard.py declares it
- apiGroups: [apps]
  resources: [deployments]
  verbs: [list, watch, create, patch, delete]
# A job's own Workload, as tfop/controller/plan/children/workload.py declares it
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads]
  verbs: [list, watch, create, patch, delete]
# END a job's own children.
# The claim a job's TensorBoard reads the logs from, for its access modes: one a single node holds puts the
# TensorBoard beside the job's pods. Read only.
- apiGroups: [""]
  resources: [persistentvolumeclaims]
  verbs: [list, watch]
# tfop's own Kueue integration (kueue.integration: own), besides a queued job's Workload (above): its status
# written to hand an evicted job's quota back; the ResourceFlavors an admission names, read for their node labels
# and tolerations, and the WorkloadPriorityClasses jobs name and the PriorityClasses their pods name, for their
# Workloads' priority; the pending Workloads of a LocalQueue, from Kueue's visibility API, for a pending job's place.
- apiGroups: [kueue.x-k8s.io]
  resources: [workloads/status]
  verbs: [patch]
- apiGroups: [visibility.kueue.x-k8s.io]
  resources: [localqueues/pendingworkloads]
  verbs: [get]
- apiGroups: [kueue.x-k8s.io]
  resources: [resourceflavors, workloadpriorityclasses]
  verbs: [list, watch]
- apiGroups: [scheduling.k8s.io]
  resources: [priorityclasses]
  verbs: [list, watch]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
# The default PS server's script (tfop/controller/ps_server_configmap.py): one ConfigMap per namespace, by name.
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create]
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: [tfop-grpc-server]
  verbs: [get, update]
{{- with (get (dict "scheduler-plugins" "scheduling.x-k8s.io" "volcano" "scheduling.volcano.sh" "kubernetes" "scheduling.k8s.io") .Values.gangScheduler) }}
# Gang scheduling: one PodGroup per job, created before its pods, patched when the job's schedulingPolicy
# changes, deleted when it finishes or is suspended.
- apiGroups: [{{ . }}]
  resources: [podgroups]
  verbs: [list, watch, create, patch, delete]
{{- end }}
{{- end -}}

{{/* The controller config file: serviceDomain, and the cloud's accelerator preset under the user's own. */}}
{{- define "tfop.controllerConfig" -}}
{{- $accelerators := dict -}}
{{- if .Values.cloud -}}
{{- $preset := .Files.Get (printf "files/accelerators/%s.yaml" .Values.cloud) -}}
{{- if not $preset -}}
{{- fail (printf "cloud=%s has no preset; use azure, gke or aws" .Values.cloud) -}}
{{- end -}}
{{- $accelerators = fromYaml $preset -}}
{{- end -}}
{{- $accelerators = mergeOverwrite $accelerators (deepCopy .Values.accelerators) -}}
{{- $config := dict "serviceDomain" .Values.serviceDomain "accelerators" $accelerators -}}
{{- if ne .Values.gangScheduler "none" -}}
{{- $_ := set $config "gangScheduler" .Values.gangScheduler -}}
{{- end -}}
{{- if ne .Values.replicaBackend "pods" -}}
{{- $_ := set $config "replicaBackend" .Values.replicaBackend -}}
{{- end -}}
{{- if ne .Values.gpuResource "nvidia.com/gpu" -}}
{{- $_ := set $config "gpuResource" .Values.gpuResource -}}
{{- end -}}
{{- if .Values.capacityScaling.enabled -}}
{{- $_ := set $config "capacityScaling" .Values.capacityScaling -}}
{{- end -}}
{{- if .Values.kueueIntegration -}}
{{- $_ := set $config "kueue" (dict "integration" .Values.kueueIntegration) -}}
{{- end -}}
{{- $config | toYaml -}}
{{- end -}}

{{/* The operator's image, by digest when one is set (the released manifests pin it), else by tag. */}}
{{- define "tfop.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

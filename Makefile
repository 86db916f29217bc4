# The README's commands live here. Everything installs what it needs: a virtualenv in .venv and the local
# control plane built from source into the per-user cache (~/.cache/tfop).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CLUSTER_DIR ?= .local/cluster
# Extra arguments for `tfop run`, e.g. make run ARGS="--threads 8"
ARGS ?=
# Extra arguments for pytest, e.g. make test PYTEST_ARGS="-k crd"
PYTEST_ARGS ?=
# A gang scheduler for `make cluster-up`: scheduler-plugins (its co-scheduler and PodGroup CRD) or volcano (its
# PodGroup CRD only), e.g. make cluster-up GANG=scheduler-plugins
GANG ?=
# How many real nodes `make run` and `make cluster-up` start (kubelet and containerd each, one pod network with
# CoreDNS; needs root; at most 4): 1 by default, 0 for kwok's fake nodes only (REAL_NODE=0 says the same).
REAL_NODE ?= 1
REAL_NODES ?= $(if $(filter 0,$(REAL_NODE)),0,1)
NODE_FLAG := --real-nodes $(REAL_NODES)

.PHONY: help venv controlplane node browser coscheduler kube-router test-artifacts test-builds builds-cached cluster-up cluster-down cluster-status cluster-destroy run test unit integration \
	e2e lint docs crd rbac constraints clean

help: ## list the targets and the variables they take
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'
	@echo "Variables: ARGS (make run: flags for tfop run), PYTEST_ARGS (test, unit, integration, e2e), HELM_ARGS"
	@echo "  (deploy-render), BENCH_ARGS (bench), CLUSTER_DIR (.local/cluster), TFOP_CACHE_DIR (~/.cache/tfop),"
	@echo "  GANG (cluster-up: scheduler-plugins or volcano), PROMETHEUS_ARGS (prometheus-up), DIGEST (release-image),"
	@echo "  BUILD_JOBS (test, test-all, test-builds: builds at once, 3)."

$(VENV)/.installed: setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $@

venv: $(VENV)/.installed ## create .venv with tfop and the test tools

controlplane: ## build (first time: tens of minutes) or reuse the pinned Kubernetes, etcd and kwok binaries
	@bash hack/build-controlplane.sh >/dev/null

browser: ## apt-install (if missing) Debian's chromium and chromedriver, which the ui's browser test drives
	@bash hack/browser.sh >/dev/null

node: ## build (first time: a few minutes) or reuse kubelet, containerd and CoreDNS; apt-installs runc, CNI plugins
	@bash hack/build-node.sh >/dev/null

kube-router: ## build (first time: 5-15 min) or reuse kube-router, whose firewall enforces NetworkPolicies on the real nodes
	@bash hack/build-kube-router.sh >/dev/null

coscheduler: ## build (first time: 5-40 min) or reuse scheduler-plugins' scheduler and PodGroup controller, for gang scheduling
	@bash hack/build-coscheduler.sh >/dev/null && bash hack/build-coscheduler.sh controller >/dev/null

cluster-up: controlplane ## start the local cluster (idempotent), with REAL_NODES real nodes (1; 0 for none); prints the kubeconfig. GANG=scheduler-plugins|volcano
	@$(PYTHON) hack/local_cluster.py up $(NODE_FLAG) --dir $(CLUSTER_DIR)
	@if [ -n "$(GANG)" ]; then $(PYTHON) hack/local_cluster.py coscheduler up --gang $(GANG) --dir $(CLUSTER_DIR); fi

cluster-down: ## stop the local cluster, keeping its data
	@if [ -x $(PY) ]; then $(PY) hack/local_cluster.py prometheus down --dir $(CLUSTER_DIR); fi
	@if [ -x $(PY) ]; then $(PY) hack/local_cluster.py kueue down --dir $(CLUSTER_DIR); fi
	@if [ -x $(PY) ]; then $(PY) hack/local_cluster.py metrics-server down --dir $(CLUSTER_DIR); fi
	@$(PYTHON) hack/local_cluster.py coscheduler down --dir $(CLUSTER_DIR)
	@$(PYTHON) hack/local_cluster.py down --dir $(CLUSTER_DIR)

cluster-destroy: ## stop the local cluster and delete its data
	@if [ -x $(PY) ]; then $(PY) hack/local_cluster.py prometheus down --dir $(CLUSTER_DIR); fi
	@if [ -x $(PY) ]; then $(PY) hack/local_cluster.py kueue down --dir $(CLUSTER_DIR); fi
	@if [ -x $(PY) ]; then $(PY) hack/local_cluster.py metrics-server down --dir $(CLUSTER_DIR); fi
	@$(PYTHON) hack/local_cluster.py coscheduler down --dir $(CLUSTER_DIR)
	@$(PYTHON) hack/local_cluster.py destroy --dir $(CLUSTER_DIR)

cluster-status: ## show which local cluster components run, and the real node's state
	@$(PYTHON) hack/local_cluster.py status --dir $(CLUSTER_DIR)
	@$(PYTHON) hack/local_cluster.py coscheduler status --dir $(CLUSTER_DIR)
	@if [ -x $(PY) ]; then $(PY) hack/local_cluster.py kueue status --dir $(CLUSTER_DIR); fi
	@if [ -x $(PY) ]; then $(PY) hack/local_cluster.py prometheus status --dir $(CLUSTER_DIR); fi
	@if [ -x $(PY) ]; then $(PY) hack/local_cluster.py metrics-server status --dir $(CLUSTER_DIR); fi

run: venv ## run the operator against $KUBECONFIG (asks before installing the CRD there; ARGS=--install-crd or --no-install-crd answer for you), or against the local cluster (started if needed, with REAL_NODES real nodes, 1 by default)
	@REAL_NODES=$(REAL_NODES) bash hack/run.sh $(ARGS)

# What the tests run on, built the first time and reused after. make test-builds builds them BUILD_JOBS at once: a
# cold build leaves a core idle while Go downloads modules and links, and the images and virtualenvs mostly wait on
# downloads. The longest first, so it is not the last one left running.
BUILD_JOBS ?= 3
TEST_BUILDS := controlplane test-artifacts prometheus kueue coscheduler metrics-server kube-router training-operator \
	helm node browser venv
# When make started (read as the Makefile is), so that run_tests.py's budget line counts the builds too.
MAKE_STARTED := $(shell date +%s)

test-builds: ## build (first time: about 5,400 core-s, 45 min of 2 idle cores) or reuse everything the tests run on, BUILD_JOBS (3) at once
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) $(TEST_BUILDS)

# Whether every one of them is cached, building nothing: each build script runs its own cache checks and stops
# where it would start building (TFOP_CHECK_CACHED, hack/lib.sh), naming what is missing. The virtualenv is not
# asked: it is the checkout's own (a minute), and `make lint`, which .ci/run runs first, makes it.
builds-cached: ## exit 0 when everything test-builds builds is cached (builds nothing; names what is not); .ci/run asks
	@TFOP_CHECK_CACHED=1 $(MAKE) --no-print-directory -k $(filter-out venv,$(TEST_BUILDS)) >/dev/null

# make test-all builds every build of TEST_BUILDS (hack/run_tests.py's BUILD_ORDER), make test all but those only the
# long tier needs (LONG_ONLY_BUILDS: metrics-server), and neither before the lanes: each lane of tests starts once
# the builds it needs first are done (the control plane, first and at full priority; for the e2e lanes the node and
# the images too), the rest building niced beside them; a lane's fixture asking for a build still in progress waits
# for it (the per-build lock, hack/lib.sh). The suites run as pytest processes at once (hack/run_tests.py), each
# with its own cluster.
test: venv ## the gate (12 min warm; CI's when a build is not cached): unit, integration and e2e against a real local control plane, all but the `long` scenarios (PYTEST_ARGS: one pytest with them, after every build)
	TFOP_MAKE_STARTED=$(MAKE_STARTED) BUILD_JOBS=$(BUILD_JOBS) $(PY) hack/run_tests.py $(PYTEST_ARGS)

test-all: venv ## every test: make test's and the `long` scenarios (test/support/tiers.py: node loss, scaling on real nodes, ...); 33 min warm; CI's when every build is cached
	TFOP_MAKE_STARTED=$(MAKE_STARTED) BUILD_JOBS=$(BUILD_JOBS) $(PY) hack/run_tests.py --all

test-artifacts: ## build or reuse what the tests run in (the node images, the TensorFlow and Kubeflow SDK virtualenvs), quietly
	@bash hack/build-images.sh >/dev/null
	@bash hack/tensorflow-venv.sh >/dev/null
	@bash hack/sdk-venv.sh >/dev/null

# The suites are selected by marker (test/conftest.py gives each test the one of its directory); the directory is
# named too only so pytest does not import the other suites' modules.
unit: venv ## run the unit tests only (-m unit; no cluster)
	$(PY) -m pytest -m unit test/unit $(PYTEST_ARGS)

integration: venv controlplane helm prometheus coscheduler training-operator kueue browser ## run the integration tests only (-m integration)
	$(PY) -m pytest -m integration test/integration $(PYTEST_ARGS)

e2e: venv controlplane node kube-router training-operator metrics-server browser ## run the end-to-end tests only (-m e2e)
	$(PY) -m pytest -m e2e test/e2e $(PYTEST_ARGS)

lint: venv ## ruff (rules in ruff.toml) over tfop, test and hack, then mypy --strict over the same; both run, either fails it
	@status=0; $(PY) -m ruff check tfop test hack || status=1; $(PY) -m mypy || status=1; exit $$status

docs: venv ## build the documentation site (docs/, mkdocs.yml) into site/; --strict: a broken link fails it
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

constraints: ## re-resolve the image's pinned dependency set into constraints.txt (review the diff, then make test)
	bash hack/constraints.sh

crd: venv controlplane ## regenerate crd/ from hack/crd-template.yaml and the local apiserver's PodTemplateSpec
	$(PY) hack/gen_crd.py

rbac: venv ## rewrite the operator's RBAC rules for a job's own children (rbac.yaml, the chart's) from their table
	$(PY) hack/gen_rbac.py

clean: ## remove the virtualenv and local state (the control-plane cache in ~/.cache/tfop stays)
	-$(PYTHON) hack/local_cluster.py destroy --dir $(CLUSTER_DIR)
	rm -rf $(VENV) .local .pytest_cache .mypy_cache *.egg-info

# The Kubeflow training operator (the Go operator) that test_takeover.py moves jobs from; the build prints its
# progress here rather than inside a test fixture.
training-operator: ## build (first time: tens of minutes on 2 cores) or reuse the Go training operator v1.9.3
	@bash hack/build-training-operator.sh >/dev/null

.PHONY: training-operator

# --- Kueue (job queueing; docs/scheduling/kueue.md) --------------------------------------------------------------
.PHONY: kueue kueue-up kueue-down

kueue: ## build (first time: 10-25 min on 2 cores) or reuse Kueue's manager (KUEUE_VERSION in hack/versions.env: both integrations' tests run it)
	@bash hack/build-kueue.sh >/dev/null

kueue-up: venv kueue ## start Kueue beside the local cluster (CLUSTER_DIR) on loopback, with its TFJob integration
	@$(PY) hack/local_cluster.py kueue up --dir $(CLUSTER_DIR)

kueue-down: venv ## stop the local cluster's Kueue and remove its webhook configurations (its CRDs and queues stay)
	@$(PY) hack/local_cluster.py kueue down --dir $(CLUSTER_DIR)

# --- metrics-server (the resource metrics API an HPA on CPU reads; docs/local-cluster/index.md) --------------------
.PHONY: metrics-server metrics-server-up metrics-server-down

metrics-server: ## build (first time: 5-15 min on 2 cores) or reuse metrics-server (METRICS_SERVER_VERSION in hack/versions.env)
	@bash hack/build-metrics-server.sh >/dev/null

metrics-server-up: venv metrics-server ## start metrics-server beside the local cluster (CLUSTER_DIR, with real nodes) on loopback: kubectl top, HPAs on CPU
	@$(PY) hack/local_cluster.py metrics-server up --dir $(CLUSTER_DIR)

metrics-server-down: venv ## unregister the local cluster's metrics.k8s.io APIService and stop metrics-server
	@$(PY) hack/local_cluster.py metrics-server down --dir $(CLUSTER_DIR)

# --- images for the real node, and TensorFlow for the tests ------------------------------------------------------
.PHONY: images image-refs release-image release release-check image-locks tensorflow sdk

images: ## build (first time: ~6 min) or reuse the TensorFlow, tfop and pause images; prints each ref and OCI archive
	@bash hack/build-images.sh

image-refs: ## after changing what goes into an image: write its new ref into hack/versions.env and examples/
	@bash hack/build-images.sh --pin

release-image: ## build tfop's image from this checkout (as root) and pin its digest in deploy/ (DIGEST=sha256:... pins that one instead)
	@bash hack/pin-release-image.sh $(DIGEST)

# The release step: the pin, then the check that deploy/ pins the image of this checkout (hack/release_pin.py).
release: release-image ## release-image, then fail unless deploy/'s digest is of this checkout's image (make release-check alone checks)
	@python3 hack/release_pin.py $(if $(DIGEST),--registry)

release-check: ## fail unless deploy/ pins the image of this checkout: its ref from the sources, its digest if the image is cached (DIGEST=...: a registry's, not compared)
	@python3 hack/release_pin.py $(if $(DIGEST),--registry)

image-locks: ## re-resolve the images' Python packages (setup.cfg, TENSORFLOW_VERSION) into hashed lock files
	@bash hack/lock-images.sh

tensorflow: ## create (first time: ~1-2 min) or reuse the pinned tensorflow-cpu virtualenv; prints its python
	@bash hack/tensorflow-venv.sh

sdk: ## create (first time: ~15 s) or reuse the Kubeflow Python SDK's virtualenv (hack/kubeflow-sdk/); prints its python
	@bash hack/sdk-venv.sh

# --- deploy/: the kustomize base and the Helm chart ---------------------------------------------------------------
# Extra arguments for `helm template`, e.g. make deploy-render HELM_ARGS="--set cloud=azure"
HELM_ARGS ?=

.PHONY: helm prometheus deploy-render

helm: ## build (first time: a few minutes) or reuse the pinned helm; prints its path
	@bash hack/build-helm.sh

# promtool checks and unit-tests the alerts in the tests; the server is for tests that scrape tfop.
prometheus: ## build (first time: ~5 min on 2 cores) or reuse promtool and the Prometheus server; prints their directory
	@bash hack/build-prometheus.sh

# Extra arguments for `hack/local_cluster.py prometheus up`, e.g. make prometheus-up PROMETHEUS_ARGS="--interval 5s";
# --metrics-secure scrapes HTTPS with a ServiceAccount token, for make run ARGS=--metrics-secure
PROMETHEUS_ARGS ?=
.PHONY: prometheus-up prometheus-down

prometheus-up: venv ## start Prometheus beside the local cluster (CLUSTER_DIR) on loopback, scraping `make run`'s /metrics as the chart's ServiceMonitor says (plain HTTP, as make run serves; PROMETHEUS_ARGS=--metrics-secure: HTTPS with a ServiceAccount token), with the chart's alerts; prints its URL
	@$(PY) hack/local_cluster.py prometheus up --dir $(CLUSTER_DIR) $(PROMETHEUS_ARGS)

prometheus-down: venv ## stop the local cluster's Prometheus (its data stays in CLUSTER_DIR)
	@$(PY) hack/local_cluster.py prometheus down --dir $(CLUSTER_DIR)

deploy-render: controlplane ## print the kustomize base, then the Helm chart rendered for release tfop in tfop-system
	@"$$(bash hack/build-controlplane.sh)/kubectl" kustomize deploy
	@echo "---"
	@# (helm notes that crds/ links to crd/ on every run; errors still show.)
	@"$$(bash hack/build-helm.sh)" template tfop deploy/helm/tfop --namespace tfop-system $(HELM_ARGS) \
		2> >(grep -v 'found symbolic link' >&2)

# --- benchmarks -------------------------------------------------------------------------------------------------
# Extra arguments for the benchmark, e.g. make bench BENCH_ARGS="--runs 5 --go-idle"
BENCH_ARGS ?=
.PHONY: bench

$(VENV)/.bench-installed: $(VENV)/.installed setup.cfg
	$(VENV)/bin/pip install --quiet -e '.[test,bench]'
	touch $@

bench: venv controlplane $(VENV)/.bench-installed ## tfop vs the apiserver's limit and the Go operator (13 min measured on 2 idle cores for limit, tfop, tfop-jobs, go-tuned; results in bench-results/)
	PYTHONPATH=hack $(PY) -m bench $(BENCH_ARGS)

.PHONY: bench-large
bench-large: venv controlplane $(VENV)/.bench-installed ## N=2,000 jobs (28,000 children) for the limit, tfop and go-tuned (20 min measured)
	PYTHONPATH=hack $(PY) -m bench --jobs 2000 --runs 1 --contenders limit,tfop,go-tuned --big-jobs 0 \
		--idle-jobs 0 --delete-each-run $(BENCH_ARGS)

# Extra arguments for the memory benchmark, e.g. make bench-memory BENCH_MEMORY_ARGS="--code ../old --replicas 1000,2000";
# issue 25's figures, two checkouts side by side: BENCH_MEMORY_ARGS="--finished 1000 --peak-jobs 2000 --code ../old --code .";
# issue 53's scale: BENCH_MEMORY_ARGS="--pile 10000 --pile-namespaces 1,50 --rounds 3" (10,000 finished jobs kept) and
# BENCH_MEMORY_ARGS="--big-job 10000 --restart-together 1000" (beside the limit client; docs/benchmarks/index.md)
BENCH_MEMORY_ARGS ?=
.PHONY: bench-memory

bench-memory: venv controlplane ## the operator's peak RSS: one job of 1,000 and 5,000 replicas, and 500 small jobs
	PYTHONPATH=hack $(PY) -m bench.memory $(BENCH_MEMORY_ARGS)

# Extra arguments for the fairness scenario, e.g. make bench-fairness BENCH_FAIRNESS_ARGS="--runs 3 --baseline ../base"
BENCH_FAIRNESS_ARGS ?=
.PHONY: bench-fairness

bench-fairness: venv controlplane $(VENV)/.bench-installed ## 100 small jobs' start latency alone and beside one job of 2,000 replicas (issue 25's fairness)
	PYTHONPATH=hack $(PY) -m bench.fairness $(BENCH_FAIRNESS_ARGS)

# --- the chaos soak (docs/operating/chaos.md) ----------------------------------------------------------------------
# A seeded schedule of faults, alone and overlapping, against a cluster of its own with two tfop replicas under
# leader election and a mix of kwok jobs; the invariants judged at the end; the report in chaos-results/.
# make chaos SEED=7 DURATION=3600 CHAOS_REAL_NODES=2 adds real nodes (root; their binaries and the TensorFlow image are
# built first), their faults (stopped, partitioned, CoreDNS restarted) and two real TensorFlow jobs at a time.
SEED ?= 1
DURATION ?= 600
CHAOS_JOBS ?= 40
CHAOS_REAL_NODES ?= 0
.PHONY: chaos

chaos: venv controlplane $(if $(filter 0,$(CHAOS_REAL_NODES)),,node images) ## the chaos soak: SEED, DURATION (seconds, 600), CHAOS_JOBS (40 kwok jobs running), CHAOS_REAL_NODES (0); report in chaos-results/
	PYTHONPATH=hack:test $(PY) -m chaos --seed $(SEED) --duration $(DURATION) --jobs $(CHAOS_JOBS) \
		--real-nodes $(CHAOS_REAL_NODES)

# The node-loss scenario's scale (make bench-nodeloss NODES=100 JOBS=200 RACK=5 for a quick one) and extra arguments,
# e.g. BENCH_NODELOSS_ARGS="--grace 60 --no-go", or tfops side by side:
# BENCH_NODELOSS_ARGS="--rounds 3 --contender 't8=--threads 8' --contender 't32=--threads 32' --no-go"
NODES ?= 1000
JOBS ?= 2000
RACK ?= 50
BENCH_NODELOSS_ARGS ?=
.PHONY: bench-nodeloss

bench-nodeloss: venv controlplane ## NODES kwok nodes, JOBS running TFJobs, RACK nodes lost at once: tfop's replacements beside the Go operator's
	PYTHONPATH=hack $(PY) -m bench.nodeloss --nodes $(NODES) --jobs $(JOBS) --rack $(RACK) $(BENCH_NODELOSS_ARGS)

# The disruption scenarios on real TensorFlow, tfop beside the Go operator (about 30 min on 2 idle cores), e.g.
# BENCH_DISRUPTIONS_ARGS="--scenarios drain,preemption --go-grace 120"
BENCH_DISRUPTIONS_ARGS ?=
.PHONY: bench-disruptions

bench-disruptions: venv controlplane node images training-operator ## drain, preemption and spot reclaim of real TensorFlow on two real nodes: tfop's rows beside the Go operator's (docs/tfjob/disruptions.md)
	PYTHONPATH=hack $(PY) -m bench.disruptions $(BENCH_DISRUPTIONS_ARGS)

# The resize scenario's scale (make bench-resize RESIZE_JOBS=20 RESIZE_NODES=20 for a quick one) and extra arguments,
# e.g. BENCH_RESIZE_ARGS="--modes inplace --no-down"; its own variables, as JOBS and NODES default to node loss's.
RESIZE_JOBS ?= 500
RESIZE_NODES ?= 100
BENCH_RESIZE_ARGS ?=
.PHONY: bench-resize

bench-resize: venv controlplane ## RESIZE_JOBS elastic TFJobs (500) scaled at once, 4 -> 8 -> 4 workers, by restart and in place: time to every resize done
	PYTHONPATH=hack $(PY) -m bench.resize --jobs $(RESIZE_JOBS) --nodes $(RESIZE_NODES) $(BENCH_RESIZE_ARGS)

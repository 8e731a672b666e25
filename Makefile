# steadylb developer targets. `make help` lists them.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

STATICCHECK_VERSION := v0.8.2
BENCHSTAT_VERSION := v0.0.0-20260908200009-22c9c6c9d4da
GO_PACKAGES := ./...
FUZZTIME ?= 30s

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

.PHONY: build
build: ## Build every package and command.
	go build $(GO_PACKAGES)

.PHONY: generate
generate: ## Regenerate deepcopy code, CRDs and the controller's and speaker's RBAC.
	go tool controller-gen object paths=./api/...
	go tool controller-gen crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	go tool controller-gen rbac:roleName=steadylb-controller paths="./internal/controller/...;./internal/mlsecret/..." output:rbac:artifacts:config=config/rbac
	go tool controller-gen rbac:roleName=steadylb-speaker paths=./internal/speaker/... output:rbac:artifacts:config=config/rbac/speaker
	@# The chart renders the same CRDs and RBAC rules: it reads copies, since
	@# Helm reads files only from inside the chart.
	rm -f charts/steadylb/charts/crds/files/*.yaml
	cp config/crd/bases/*.yaml charts/steadylb/charts/crds/files/
	cp config/rbac/role.yaml charts/steadylb/files/rbac/controller.yaml
	cp config/rbac/speaker/role.yaml charts/steadylb/files/rbac/speaker.yaml

.PHONY: verify-generated
verify-generated: ## Fail when generated files differ from what the types produce.
	@before="$$(hack/generated-sum.sh)"; $(MAKE) --no-print-directory generate >/dev/null; \
		if [[ "$$before" != "$$(hack/generated-sum.sh)" ]]; then \
		echo "generated files were out of date and have been regenerated: review and commit them"; \
		git status --short -- api config charts; exit 1; fi

.PHONY: lint
lint: ## gofmt, go vet and staticcheck.
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
		if [[ -n "$$unformatted" ]]; then echo "not gofmt-clean:"; echo "$$unformatted"; exit 1; fi
	go vet $(GO_PACKAGES)
	go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(GO_PACKAGES)

.PHONY: control-plane
control-plane: ## Build kube-apiserver, etcd and kubectl into the cache (once per version).
	@hack/control-plane.sh >/dev/null

.PHONY: kube-proxy
kube-proxy: ## Build kube-proxy for the lab cluster (once per version; about 5 minutes after the control plane).
	@hack/kube-proxy.sh >/dev/null

.PHONY: tools
tools: ## Build helm (v4 and v3) and promtool into the cache (once per version).
	@hack/tools.sh helm >/dev/null
	@hack/tools.sh helm3 >/dev/null
	@hack/tools.sh promtool >/dev/null

.PHONY: test
test: verify-generated lint control-plane kube-proxy tools ## The whole test suite (builds the control plane, kube-proxy and the tools on first run); ends with what it skipped and why.
	KUBEBUILDER_ASSETS="$$(hack/control-plane.sh --path)" \
		go test -json -count=1 -timeout 30m $(GO_PACKAGES) | go run ./hack/testsummary

.PHONY: images
images: ## Build the controller, speaker and kubectl-steadylb images (OCI layouts, tarballs, SBOMs) into build/images and print their references.
	go run ./hack/images -out build/images

.PHONY: unit
unit: ## Only the tests that need no control plane.
	@# Packages whose tests start the control plane import test/testenv.
	go test -count=1 $$(go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./internal/... ./api/... \
		| grep -v 'steadylb/test/testenv' | cut -d' ' -f1)

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each.
	@for pkg in $$(go list ./...); do \
		for target in $$(go test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "fuzz $$pkg $$target"; \
			go test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) $$pkg; \
		done; \
	done

.PHONY: bench
bench: ## Run the benchmarks recorded in BENCHMARKS.md.
	go test -run '^$$' -bench . -benchtime 1s -count 6 ./internal/ipam/ | tee ipam.txt
	go run golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION) -col /impl ipam.txt

.PHONY: bench-controller
bench-controller: control-plane ## Measure the controller end to end on the local control plane (about 45 minutes).
	go test -run '^$$' -bench '^BenchmarkController$$' -benchtime 1x -count 3 -timeout 0 ./test/bench/ | tee controller.txt
	go run golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION) controller.txt

.PHONY: bench-reservations
bench-reservations: control-plane ## Restart the controller over retained and reserved addresses (about 6 minutes).
	go test -run '^$$' -bench '^BenchmarkRestartWithReservations$$' -benchtime 1x -count 1 -timeout 0 ./test/bench/ | tee reservations.txt

.PHONY: bench-speaker
bench-speaker: control-plane ## Measure layer-2 failover, handback, split brain (frozen node, cut link) and the speaker's footprint in network namespaces (root; about 45 minutes).
	go test -run '^$$' -bench 'Failover|Footprint|SplitBrain' -benchtime 1x -count 1 -timeout 0 ./test/speaker/packets/ | tee speaker.txt

.PHONY: bench-speaker-bgp
bench-speaker-bgp: control-plane ## Measure BGP: a Service change at 10 and 10,000 Services, and 1,000 to 10,000 Services announced from three speakers to FRR (root, FRR; about 40 minutes).
	go test -run '^$$' -bench '^BenchmarkBGPServiceChange$$' -benchtime 20x -count 1 -timeout 0 ./test/speaker/ | tee speaker-bgp.txt
	go test -run '^$$' -bench '^BenchmarkBGPScale$$' -benchtime 1x -count 1 -timeout 0 ./test/speaker/packets/ | tee -a speaker-bgp.txt

.PHONY: bench-plugin
bench-plugin: control-plane ## Time each kubectl-steadylb command and count its API requests at 10,000 Services (about 5 minutes).
	go test -run '^$$' -bench . -benchtime 5x -count 1 -timeout 0 ./test/plugin/ | tee plugin.txt

.PHONY: bench-bgp-link
bench-bgp-link: ## Time a link cut until FRR drops the route: BFD 300ms x3 single-hop and multi-hop, and a 9s hold timer; then session setup times (root, FRR; about 7 minutes).
	go test -run '^$$' -bench 'LinkCut|SessionSetup' -benchtime 1x -count 1 -timeout 0 ./test/bgp/ | tee bgp-link.txt

.PHONY: bench-bgp-restart
bench-bgp-restart: control-plane ## A killed speaker restarted until FRR has its route again, 5 trials (root, FRR; about 2 minutes).
	go test -run '^$$' -bench '^BenchmarkBGPRestart$$' -benchtime 1x -count 1 -timeout 0 ./test/speaker/packets/ | tee bgp-restart.txt

.PHONY: bench-bgp-update
bench-bgp-update: ## The cost of one BGP Update with 10 and 10,000 routes advertised, against FRR (root, FRR; about 2 minutes).
	go test -run '^$$' -bench 'Update' -benchtime 5000x -count 6 -timeout 0 ./test/bgp/ | tee bgp-update.txt
	go run golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION) bgp-update.txt

.PHONY: bench-traffic-l2
bench-traffic-l2: control-plane kube-proxy ## Failed requests and the longest gap through a layer-2 address: speaker killed, link cut, node frozen, rolling upgrade (root; about 15 minutes).
	go test -run '^$$' -bench '^BenchmarkL2$$' -benchtime 1x -count 1 -timeout 0 ./test/cluster/ | tee traffic-l2.txt

.PHONY: bench-traffic-bgp
bench-traffic-bgp: control-plane kube-proxy ## Failed requests and the longest gap through a BGP address with FRR routing over the nodes: speaker killed, link cut with BFD, drain, rolling upgrade (root, FRR; about 15 minutes).
	go test -run '^$$' -bench '^BenchmarkBGP$$' -benchtime 1x -count 1 -timeout 0 ./test/cluster/ | tee traffic-bgp.txt

.PHONY: demo
demo: control-plane ## Run steadylb with a sample configuration: as root on the lab cluster with traffic, else the controller alone.
	@if [[ "$$(id -u)" == 0 ]]; then hack/kube-proxy.sh >/dev/null; fi
	go run ./hack/demo

//go:build tools

// The commands built from other modules: their versions are pinned by go.mod through these
// imports (a `tool` directive would make `go build` of them fail on their test-only packages).
package tools

import (
	_ "github.com/sigstore/cosign/v2/cmd/cosign"
	_ "go.etcd.io/etcd/server/v3"
	_ "helm.sh/helm/v3/cmd/helm"
)

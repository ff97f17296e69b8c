//go:build tools

// Package tools pins Prometheus' mysqld_exporter as a module dependency so
// that scripts/exporter-test.sh can build it with `go build` from the module
// cache (a plain `go install ...@version` is not used).
package tools

import (
	_ "github.com/prometheus/mysqld_exporter"
)

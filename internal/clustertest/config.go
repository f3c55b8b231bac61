//go:build unix

package clustertest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// configTemplate is the server's configuration, shared by the four
// processes: each starts the service its --service names on that
// service's ports. Membership goes through the cluster_membership table in
// PostgreSQL (ringpop), as in any self-hosted cluster. Placeholders:
// {{port.NAME}}, {{pg}}, {{dynamic}}.
const configTemplate = `log:
  stdout: true
  level: warn

persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
    postgres-default:
      sql:
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "127.0.0.1:{{pg}}"
        connectProtocol: tcp
        user: temporal
        password: ""
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
    postgres-visibility:
      sql:
        pluginName: postgres12
        databaseName: temporal_visibility
        connectAddr: "127.0.0.1:{{pg}}"
        connectProtocol: tcp
        user: temporal
        password: ""
        maxConns: 10
        maxIdleConns: 10
        maxConnLifetime: 1h

global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: 127.0.0.1

services:
  frontend:
    rpc:
      grpcPort: {{port.frontend.grpc}}
      membershipPort: {{port.frontend.membership}}
      httpPort: {{port.frontend.http}}
      bindOnLocalHost: true
  history:
    rpc:
      grpcPort: {{port.history.grpc}}
      membershipPort: {{port.history.membership}}
      bindOnLocalHost: true
  matching:
    rpc:
      grpcPort: {{port.matching.grpc}}
      membershipPort: {{port.matching.membership}}
      bindOnLocalHost: true
  worker:
    rpc:
      grpcPort: {{port.worker.grpc}}
      membershipPort: {{port.worker.membership}}
      bindOnLocalHost: true

clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "127.0.0.1:{{port.frontend.grpc}}"

dcRedirectionPolicy:
  policy: noop

dynamicConfigClient:
  filepath: "{{dynamic}}"
  pollInterval: 10s
`

// dynamicConfig is the cluster's dynamic configuration: Temporal's
// defaults, rate limits included, as a new cluster has them.
const dynamicConfig = "# Temporal's defaults.\n"

// writeConfig writes config.yaml and dynamicconfig.yaml into the cluster's
// directory.
func (c *Cluster) writeConfig(ports map[string]int) error {
	dynamic := filepath.Join(c.dir, "dynamicconfig.yaml")
	if err := os.WriteFile(dynamic, []byte(dynamicConfig), 0o644); err != nil {
		return err
	}
	pairs := []string{"{{pg}}", fmt.Sprint(c.pg.port), "{{dynamic}}", dynamic}
	for name, port := range ports {
		pairs = append(pairs, "{{port."+name+"}}", fmt.Sprint(port))
	}
	cfg := strings.NewReplacer(pairs...).Replace(configTemplate)
	if i := strings.Index(cfg, "{{"); i >= 0 {
		return fmt.Errorf("config: a placeholder left: %.40s", cfg[i:])
	}
	return os.WriteFile(filepath.Join(c.dir, "config.yaml"), []byte(cfg), 0o644)
}

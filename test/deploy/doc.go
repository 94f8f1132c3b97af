// Package deploy checks the deployment files under deploy/ against the binary they run:
// the systemd unit (its hardening, and systemd-analyze's verdict when systemd is
// installed), the example configuration, the container image and the Kubernetes manifest.
// Every flag, configuration key and RAFTLOCK_* variable they pass to `raftlock serve` must
// be one that `raftlock serve --help` lists, so that a renamed flag cannot silently break
// a deployment.
package deploy

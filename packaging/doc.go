// Package packaging holds the files that install pgjobs on a server (init script, systemd unit,
// nfpm package definition, maintainer scripts, pgjobs-install and pgjobs-remove) and their test.
package packaging

// Command pause is the sandbox process of a pod on the local cluster's real node: it holds the pod's namespaces
// open while the containers come and go. As PID 1 of a pod that shares its process namespace it also reaps the
// orphans re-parented to it, which would otherwise linger as zombies. It exits 0 on SIGTERM or SIGINT, so that
// stopping a sandbox is quick and clean.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "pause: %v, exiting\n", sig)
		os.Exit(0)
	}
}

// reap collects every child that has exited. Signals coalesce, so one SIGCHLD may stand for several exits:
// loop until none is left.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

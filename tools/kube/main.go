// Command kube is the Kubernetes control plane and node programs of the pinned release in one
// binary that runs as whichever it is called (the old hyperkube): kube-apiserver,
// kube-controller-manager, kube-scheduler, kubelet, kubectl and kubeadm. Linking them together
// compiles the packages they share once, which halves the cold build on two cores
// (docs/testing.md, "The pinned tools"). scripts/dev.sh tools makes one symlink per name.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	_ "time/tzdata" // CronJob time zones, as kube-controller-manager's own main has it

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeadm "k8s.io/kubernetes/cmd/kubeadm/app"
	kubeadmerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins
)

var servers = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
}

func main() {
	name := filepath.Base(os.Args[0])
	if name == "kube" && len(os.Args) > 1 {
		// `kube kubectl get nodes` as well as a symlink named kubectl.
		name = os.Args[1]
		os.Args = os.Args[1:]
	}
	switch name {
	case "kubectl":
		logs.GlogSetter(kubectlcmd.GetLogVerbosity(os.Args)) //nolint:errcheck
		if err := cli.RunNoErrOutput(kubectlcmd.NewDefaultKubectlCommand()); err != nil {
			kubectlutil.CheckErr(err)
		}
	case "kubeadm":
		kubeadmerrors.HandleError(kubeadm.Run())
	default:
		newCommand, ok := servers[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "kube: called as %q; call it as kube-apiserver, "+
				"kube-controller-manager, kube-scheduler, kubelet, kubectl or kubeadm\n", name)
			os.Exit(2)
		}
		os.Exit(cli.Run(newCommand()))
	}
}

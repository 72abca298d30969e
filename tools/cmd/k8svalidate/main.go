// Command k8svalidate validates rendered Kubernetes manifests offline
// (helm template ... | k8svalidate -expect DaemonSet,ConfigMap). It exits 1
// on any problem and prints each one.
package main

import (
	"flag"
	"fmt"
	"io"
	corev1 "k8s.io/api/core/v1"
	"os"
	"sort"
	"strings"

	"github.com/kafka-disk-guard/kafka-disk-guard/tools/k8scheck"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "k8svalidate:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("k8svalidate", flag.ContinueOnError)
	expect := fs.String("expect", "", "comma-separated kinds that must be rendered at least once")
	name := fs.String("name", "stdin", "name of the input in messages")
	dumpConfig := fs.String("dump-config", "", "write the rendered guard config.yaml here, for `kafka-disk-guard check-config`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	docs, err := k8scheck.SplitDocuments(stdin)
	if err != nil {
		return err
	}
	var objs []k8scheck.Object
	var problems []string
	for _, d := range docs {
		o, err := k8scheck.Decode(d)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		objs = append(objs, o)
	}
	for _, e := range k8scheck.Validate(objs) {
		problems = append(problems, e.Error())
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GVK.Kind]++
	}
	for _, k := range strings.Split(*expect, ",") {
		if k = strings.TrimSpace(k); k != "" && kinds[k] == 0 {
			problems = append(problems, fmt.Sprintf("expected at least one %s, rendered none", k))
		}
	}
	if *dumpConfig != "" {
		found := false
		for _, o := range objs {
			if cm, ok := o.Obj.(*corev1.ConfigMap); ok {
				if raw, ok := cm.Data["config.yaml"]; ok {
					if err := os.WriteFile(*dumpConfig, []byte(raw), 0o644); err != nil {
						return err
					}
					found = true
				}
			}
		}
		if !found {
			problems = append(problems, "no ConfigMap with a config.yaml rendered")
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(stdout, "%s: %s\n", *name, p)
		}
		return fmt.Errorf("%s: %d problem(s)", *name, len(problems))
	}
	names := make([]string, 0, len(kinds))
	for k, n := range kinds {
		names = append(names, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(names)
	fmt.Fprintf(stdout, "%s: %d objects valid (%s)\n", *name, len(objs), strings.Join(names, " "))
	return nil
}

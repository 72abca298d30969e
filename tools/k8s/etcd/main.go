// Command etcd runs a single-member etcd (go.etcd.io/etcd/server/v3/embed)
// for the test control plane of scripts/k8s.sh: plain HTTP on loopback,
// data in -data-dir. It stops on SIGINT or SIGTERM.
package main

import (
	"flag"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "directory of the member's data")
	client := flag.String("listen-client-url", "http://127.0.0.1:2379", "client URL")
	peer := flag.String("listen-peer-url", "http://127.0.0.1:2380", "peer URL")
	flag.Parse()

	cfg := embed.NewConfig()
	cfg.Dir = *dataDir
	cfg.LogLevel = "warn"
	cu, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("client url: %v", err)
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("peer url: %v", err)
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("start etcd: %v", err)
	}
	defer e.Close()
	<-e.Server.ReadyNotify()
	log.Printf("etcd ready on %s", cu)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-e.Err():
		log.Fatalf("etcd: %v", err)
	}
}

package cluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"berth.io/berth/internal/cluster/pki"
	"berth.io/berth/internal/problem"
)

// ContextName is the kubeconfig context a cluster is merged as.
func ContextName(name string) string { return "berth-" + name }

// adminKubeconfig is the cluster's admin kubeconfig, with the
// credentials embedded so the file stands alone.
func adminKubeconfig(name, server string, p pki.Dir) (*clientcmdapi.Config, error) {
	read := func(f string) ([]byte, error) {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		return b, nil
	}
	ca, err := read(p.CACert())
	if err != nil {
		return nil, err
	}
	cert, err := read(p.AdminCert())
	if err != nil {
		return nil, err
	}
	key, err := read(p.AdminKey())
	if err != nil {
		return nil, err
	}
	ctx := ContextName(name)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[ctx] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[ctx] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[ctx] = &clientcmdapi.Context{Cluster: ctx, AuthInfo: ctx}
	cfg.CurrentContext = ctx
	return cfg, nil
}

// userKubeconfig is the file kubectl writes to: the first of $KUBECONFIG,
// else ~/.kube/config.
func userKubeconfig() string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if len(rules.Precedence) > 0 {
		return rules.Precedence[0]
	}
	return rules.GetDefaultFilename()
}

// MergeKubeconfig adds the cluster as context berth-NAME to the user's
// kubeconfig and makes it current, as kind does. Other entries are kept.
func MergeKubeconfig(admin *clientcmdapi.Config) (string, error) {
	path := userKubeconfig()
	existing, err := clientcmd.LoadFromFile(path)
	if os.IsNotExist(err) {
		existing, err = clientcmdapi.NewConfig(), nil
	}
	if err != nil {
		return path, problem.Errorf("repair the file, or point KUBECONFIG elsewhere", "reading kubeconfig %s: %w", path, err)
	}
	for k, v := range admin.Clusters {
		existing.Clusters[k] = v
	}
	for k, v := range admin.AuthInfos {
		existing.AuthInfos[k] = v
	}
	for k, v := range admin.Contexts {
		existing.Contexts[k] = v
	}
	existing.CurrentContext = admin.CurrentContext
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return path, err
	}
	return path, clientcmd.WriteToFile(*existing, path)
}

// RemoveFromKubeconfig deletes context berth-NAME (and its cluster and
// user) from the user's kubeconfig; it is not an error if it is absent.
func RemoveFromKubeconfig(name string) error {
	path := userKubeconfig()
	cfg, err := clientcmd.LoadFromFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading kubeconfig %s: %w", path, err)
	}
	ctx := ContextName(name)
	if _, ok := cfg.Contexts[ctx]; !ok {
		return nil
	}
	delete(cfg.Contexts, ctx)
	delete(cfg.Clusters, ctx)
	delete(cfg.AuthInfos, ctx)
	if cfg.CurrentContext == ctx {
		cfg.CurrentContext = ""
	}
	return clientcmd.WriteToFile(*cfg, path)
}

package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/clawdapus/clawgo/internal/adminclient"
	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/pod"
)

// podAdmin returns a client of the running pod's admin listener: the
// port the host publishes it on (cllama's container) and the operator
// token in .claw-auth.
func podAdmin(ctx context.Context, f *Factory, o *PodOptions) (*adminclient.Client, error) {
	p, err := o.load(ctx, f.Env)
	if err != nil {
		return nil, err
	}
	eng, err := engineFor(ctx, f, p)
	if err != nil {
		return nil, err
	}
	return adminOf(ctx, eng, p)
}

// adminOf finds the admin listener of the pod p running under eng.
func adminOf(ctx context.Context, eng Engine, p *pod.Pod) (*adminclient.Client, error) {
	token, err := adminclient.ReadToken(filepath.Join(p.Dir, filepath.FromSlash(compile.OperatorTokenFile)))
	if err != nil {
		return nil, err
	}
	addr, err := adminAddress(ctx, eng, adminPort(p))
	if err != nil {
		return nil, err
	}
	return adminclient.New("http://"+addr, token), nil
}

// adminPort is the admin listener's port in cllama's container: the
// default, or the one x-claw.cllama-defaults.env.CLLAMA_ADMIN_ADDR names.
func adminPort(p *pod.Pod) int {
	if v := p.Claw.CllamaDefaults.Env["CLLAMA_ADMIN_ADDR"]; v != "" {
		if _, port, err := net.SplitHostPort(v); err == nil {
			if n, err := strconv.Atoi(port); err == nil {
				return n
			}
		}
	}
	return compile.AdminPort
}

// adminAddress is where the host publishes port of a running cllama
// container, as host:port reachable from here (a wildcard address is
// reached on loopback).
func adminAddress(ctx context.Context, eng Engine, port int) (string, error) {
	cs, err := eng.Containers(ctx)
	if err != nil {
		return "", err
	}
	target := fmt.Sprintf("%d/tcp", port)
	for _, c := range cs {
		if c.Service != compile.CllamaService || c.State != "running" {
			continue
		}
		for _, pt := range c.Ports {
			if pt.Target != target || pt.Published == "" {
				continue
			}
			host, hp, err := net.SplitHostPort(pt.Published)
			if err != nil {
				continue
			}
			if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
				host = "127.0.0.1"
			}
			return net.JoinHostPort(host, hp), nil
		}
	}
	return "", fmt.Errorf("no running cllama publishes its admin listener (port %d): is the pod up? (claw up; claw ps)", port)
}

// adminLine says where the operator reaches the admin listener, for
// claw up; empty when it cannot be found yet.
func adminLine(ctx context.Context, eng Engine, p *pod.Pod) string {
	addr, err := adminAddress(ctx, eng, adminPort(p))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("claw: operator console and API at http://%s (operator token in %s; claw console)", addr, strings.TrimPrefix(compile.OperatorTokenFile, "./"))
}

package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/redis/go-redis/v9"

	"github.com/clawdapus/clawgo/internal/proxy"
	"github.com/clawdapus/clawgo/internal/resultstore"
)

// openResults opens the store of tool results kept whole behind a handle
// (issue 37): in Redis when the state is shared (CLLAMA_STATE_URL), else
// in files under the state directory (<state>/results), else in memory.
func openResults(cfg proxy.Config, rc *redis.Client, stderr io.Writer) (resultstore.Store, error) {
	limits := resultstore.Limits{MaxResultBytes: cfg.ResultMaxBytes, MaxAgentBytes: cfg.ResultStoreAgentBytes, MaxBytes: cfg.ResultStoreBytes}
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	if rc != nil {
		return resultstore.NewRedis(rc, resultstore.RedisOptions{Pod: cfg.Pod, Limits: limits}), nil
	}
	dir := cfg.ContinuityDir()
	if dir != "" {
		dir = filepath.Join(dir, "results")
	}
	s, err := resultstore.OpenLocal(resultstore.LocalOptions{Dir: dir, Limits: limits})
	if err != nil {
		return nil, fmt.Errorf("%w (CLLAMA_STATE_DIR must be a writable directory)", err)
	}
	if dir == "" {
		fmt.Fprintln(stderr, "cllama: no CLLAMA_STATE_DIR or CLAW_SESSION_HISTORY_DIR: kept tool results are held in memory only")
	}
	return s, nil
}

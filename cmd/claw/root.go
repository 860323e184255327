package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"

	"github.com/clawdapus/clawgo/internal/compile"
	"github.com/clawdapus/clawgo/internal/termsafe"
	"github.com/clawdapus/clawgo/internal/version"
)

// Exit codes, decided in Main only.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// IOStreams are the command's standard streams, injected so tests capture
// output.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// Factory hands commands their dependencies. Tests replace any field.
type Factory struct {
	IO IOStreams
	// Env is the process environment (os.Environ form), used for pod
	// interpolation.
	Env []string
	// Engine returns the Docker Compose engine for a pod; see engine.go.
	Engine func(context.Context, EngineConfig) (Engine, error)
	// Images reads descriptors from local images (claw up, compile --images).
	Images func() compile.ImageSource
	// ImageStore checks and pulls the images claw up runs (images.go);
	// nil, or returning nil, leaves that to compose.
	ImageStore func() ImageStore
	// Signals routes the process's interrupts; nil in tests.
	Signals *SignalRelay
}

// DefaultFactory wires the real process: os streams and environment, the
// docker CLI.
func DefaultFactory() *Factory {
	return &Factory{
		IO:         IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr},
		Env:        os.Environ(),
		Engine:     NewComposeEngine,
		Images:     func() compile.ImageSource { return compile.DockerImages{} },
		ImageStore: newDockerImageStore,
	}
}

// verbs registers every subcommand; each verb's file adds itself in init,
// so adding a verb is a one-file change.
var verbs = map[string]func(*Factory) *cobra.Command{}

func registerVerb(name string, newCmd func(*Factory) *cobra.Command) { verbs[name] = newCmd }

// UsageError marks errors that exit with ExitUsage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// NewRootCmd builds the command tree for f.
func NewRootCmd(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "claw",
		Short: "Compile and run governed AI agent pods",
		Long: `claw compiles a claw-pod.yml (a Docker Compose file with x-claw blocks) and
its services' claw.describe descriptors into per-agent governed context, then
runs the pod on Docker Compose with the cllama governance proxy.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return nil
		},
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		Version: version.String("claw"),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cmd := verbs[n](f)
		cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
			if c.Name() == "logs" && strings.Contains(err.Error(), "'f' in -f") {
				// -f is the pod file here too, not compose's follow.
				err = fmt.Errorf("%w; -f names the pod file in every claw verb (to follow the logs, use --follow)", err)
			}
			return &UsageError{Err: err}
		})
		root.AddCommand(cmd)
	}
	return root
}

// Main runs claw with args and returns the exit code: 0 ok, 1 failure,
// 2 usage.
func Main(ctx context.Context, args []string, f *Factory) int {
	// compose-go reports unset variables and the like through logrus.
	logrus.SetOutput(f.IO.ErrOut)
	logrus.SetFormatter(warningFormatter{})
	root := NewRootCmd(f)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	// An error may quote what an agent, a model or a service wrote.
	fmt.Fprintf(f.IO.ErrOut, "claw: %s\n", termsafe.Lines(err.Error()))
	var ue *UsageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") {
		// The help of the verb that was misused (claw logs --help), or
		// claw's own for an unknown verb.
		path := root.CommandPath()
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(f.IO.ErrOut, "Run '%s --help' for usage.\n", path)
		return ExitUsage
	}
	return ExitFailure
}

// noArgs rejects positional arguments as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.CommandPath(), args)
	}
	return nil
}

// maxArgs allows at most n positional arguments.
func maxArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return usageErrorf("%s takes at most %d argument(s), got %q", cmd.CommandPath(), n, args)
		}
		return nil
	}
}

// warningFormatter prints compose-go's log entries as claw warnings.
type warningFormatter struct{}

func (warningFormatter) Format(e *logrus.Entry) ([]byte, error) {
	return []byte(e.Level.String() + ": " + termsafe.Lines(e.Message) + "\n"), nil
}

package tollgate_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// testAdminKey is the TOLLGATE_ADMIN_KEY of the gateway the tests start.
const testAdminKey = "admin-key-for-go-sdk-tests"

// Bounds of the gateway's life in the tests: start-up includes compiling TypeScript with tsx.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 15 * time.Second
)

// gatewayProcess is a real tollgate (node --import tsx src/main.ts) started for the tests.
type gatewayProcess struct {
	URL    string
	port   int
	cmd    *exec.Cmd
	exited chan struct{}
	output *lockedBuffer
}

// lockedBuffer collects the gateway's output from two pipes at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// repoRoot is the tollgate checkout this SDK lives in (sdk/go is two levels down).
func repoRoot() (string, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "src", "main.ts")); err != nil {
		return "", fmt.Errorf("no tollgate checkout at %s: %w", root, err)
	}
	return root, nil
}

// freePort asks the kernel for a port nobody listens on.
func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer listener.Close()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

// writeGatewayConfig writes the config file: one OpenAI-compatible provider, "fake", at the fake
// upstream, priced so that spend and budgets are real numbers; every model call needs a virtual key.
func writeGatewayConfig(dir, upstreamURL string) (string, error) {
	config := fmt.Sprintf(`settings:
  require_virtual_key: true
providers:
  fake:
    type: openai
    base_url: %s/v1
    api_key: %s
    models: [echo-1]
    prices:
      echo-1: { input_per_mtok: 1, output_per_mtok: 2 }
`, upstreamURL, fakeUpstreamKey)
	path := filepath.Join(dir, "tollgate.config.yaml")
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// startGateway starts tollgate on a free port with its data in dir and waits until /health answers.
func startGateway(dir, upstreamURL string) (*gatewayProcess, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is needed to run tollgate: %w", err)
	}
	configPath, err := writeGatewayConfig(dir, upstreamURL)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	gw := &gatewayProcess{URL: "http://127.0.0.1:" + strconv.Itoa(port), port: port, exited: make(chan struct{}), output: &lockedBuffer{}}
	gw.cmd = exec.Command(node, "--import", "tsx", "src/main.ts")
	gw.cmd.Dir = root
	// Only what the gateway needs: no provider keys or TOLLGATE_* settings leak in from the caller.
	gw.cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"PORT=" + strconv.Itoa(port),
		"HOST=127.0.0.1",
		"TOLLGATE_DATA_DIR=" + filepath.Join(dir, "data"),
		"TOLLGATE_CONFIG=" + configPath,
		"TOLLGATE_ADMIN_KEY=" + testAdminKey,
		"TOLLGATE_SHUTDOWN_GRACE_MS=2000",
		"LOG_LEVEL=warn",
	}
	gw.cmd.Stdout = gw.output
	gw.cmd.Stderr = gw.output
	// If this test binary dies (a panic, go test's timeout), the kernel kills the gateway with it, so
	// no run leaves a server behind. The signal follows the thread that started the child, which is
	// why that thread stays locked and alive until the gateway exits (see spawnLocked).
	dieWithTestBinary(gw.cmd)
	if err := spawnLocked(gw.cmd, gw.exited); err != nil {
		return nil, fmt.Errorf("starting the gateway: %w", err)
	}
	if err := gw.waitHealthy(); err != nil {
		gw.kill()
		return nil, err
	}
	return gw, nil
}

// spawnLocked starts cmd from a goroutine locked to its OS thread and keeps that thread until the
// process exits (then closes exited): Pdeathsig fires when the starting thread ends, and the Go
// runtime may otherwise end or reuse threads at will.
func spawnLocked(cmd *exec.Cmd, exited chan struct{}) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			close(exited)
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(exited)
	}()
	return <-started
}

func (gw *gatewayProcess) waitHealthy() error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-gw.exited:
			return fmt.Errorf("the gateway exited during start-up:\n%s", gw.output.String())
		default:
		}
		resp, err := client.Get(gw.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the gateway did not answer /health within %s:\n%s", startTimeout, gw.output.String())
}

// kill ends the gateway at once and waits for it.
func (gw *gatewayProcess) kill() {
	_ = gw.cmd.Process.Kill()
	select {
	case <-gw.exited:
	case <-time.After(stopTimeout):
	}
}

// stop shuts the gateway down as a supervisor does (SIGTERM, then SIGKILL past the bound) and checks
// that it is gone: the process has exited and its port refuses connections.
func (gw *gatewayProcess) stop() error {
	_ = gw.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-gw.exited:
	case <-time.After(stopTimeout):
		gw.kill()
	}
	select {
	case <-gw.exited:
	default:
		return fmt.Errorf("the gateway (pid %d) is still running after SIGKILL", gw.cmd.Process.Pid)
	}
	// Signal 0 probes for the process without touching it: ESRCH means it is gone (and reaped).
	if err := syscall.Kill(gw.cmd.Process.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("the gateway's pid %d still exists (kill -0: %v)", gw.cmd.Process.Pid, err)
	}
	conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(gw.port), time.Second)
	if err == nil {
		conn.Close()
		return fmt.Errorf("port %d still accepts connections after the gateway stopped", gw.port)
	}
	return nil
}

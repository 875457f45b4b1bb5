package tollgate_test

import (
	"bytes"
	"context"
	"go/format"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	tollgate "github.com/tollgate-gateway/tollgate/sdk/go"
)

// readmeBlock is one fenced code block of README.md.
type readmeBlock struct {
	lang string
	text string
	line int
}

var fence = regexp.MustCompile("^```(\\S*)\\s*$")

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var blocks []readmeBlock
	for i := 0; i < len(lines); i++ {
		open := fence.FindStringSubmatch(lines[i])
		if open == nil {
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		blocks = append(blocks, readmeBlock{lang: open[1], text: strings.Join(body, "\n") + "\n", line: start + 1})
	}
	return blocks
}

// modulePath is the module line of go.mod.
func modulePath(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	match := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(data)
	if match == nil {
		t.Fatal("go.mod has no module line")
	}
	return string(match[1])
}

// Every code block of this directory's README is checked: each Go block is a gofmt-formatted program
// that runs to success against the test gateway (its URL and models swapped for the test's), and the
// install line names this module. A block of another language fails, so none goes unchecked.
func TestReadmeExamples(t *testing.T) {
	module := modulePath(t)
	sdkDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	admin := adminClient(t)
	key := createKey(t, tollgate.KeyCreate{Name: "readme-examples"})
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	ran := 0
	for _, block := range readmeBlocks(t) {
		switch block.lang {
		case "sh":
			if strings.TrimSpace(block.text) != "go get "+module {
				t.Errorf("README.md line %d: the install line is %q, want go get %s", block.line, strings.TrimSpace(block.text), module)
			}
		case "go":
			ran++
			t.Run("line "+strconv.Itoa(block.line), func(t *testing.T) {
				formatted, err := format.Source([]byte(block.text))
				if err != nil || !bytes.Equal(formatted, []byte(block.text)) {
					t.Fatalf("README.md line %d: not gofmt-formatted (%v)", block.line, err)
				}
				output := runExample(t, goTool, module, sdkDir, block.text, map[string]string{
					"TOLLGATE_ADMIN_KEY":   testAdminKey,
					"TOLLGATE_VIRTUAL_KEY": key.Key,
				})
				if strings.TrimSpace(output) == "" {
					t.Fatalf("README.md line %d: the example printed nothing", block.line)
				}
			})
		default:
			t.Errorf("README.md line %d: no check for ```%s blocks; add one to this test", block.line, block.lang)
		}
	}
	if ran < 3 {
		t.Fatalf("only %d Go examples found", ran)
	}
	// The management example adds a provider and a route; leave the gateway as the other tests expect.
	_, _ = admin.Routes.Delete(context.Background(), "chat-default")
	_, _ = admin.Providers.Delete(context.Background(), "lab")
}

// runExample builds and runs one example as its own module, using this SDK through a replace
// directive (no network), and returns its output.
func runExample(t *testing.T, goTool, module, sdkDir, source string, env map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	program := strings.NewReplacer(
		"http://localhost:8080", gateway.URL,
		"openai/gpt-4o-mini", "fake/echo-1",
	).Replace(source)
	goMod := "module readmeexample\n\ngo 1.19\n\nrequire " + module + " v0.0.0\n\nreplace " + module + " => " + sdkDir + "\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	for name, value := range env {
		cmd.Env = append(cmd.Env, name+"="+value)
	}
	output, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the example failed: %v\n%s", err, output)
	}
	return string(output)
}

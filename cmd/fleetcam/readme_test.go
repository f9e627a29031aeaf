package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// readmeBlock is a shell block of README.md marked to run, "<!-- run: KIND -->"
// on the line before its fence: "server" is make run, which the test
// replaces by a fleetcam of its own started with the block's settings;
// "terminal" runs in a terminal of its own until the test ends; "shell"
// runs in the one shell the other blocks share, in order.
type readmeBlock struct {
	kind, code string
	line       int
}

var runMarker = regexp.MustCompile(`^<!-- run: (server|terminal|shell) -->$`)

// readmeBlocks returns README.md's blocks marked to run, in order.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var blocks []readmeBlock
	for i := 0; i < len(lines); i++ {
		m := runMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "```sh" {
			t.Fatalf("README.md:%d: %s is not followed by a ```sh block", i+1, lines[i])
		}
		b := readmeBlock{kind: m[1], line: i + 3}
		for i += 2; i < len(lines) && lines[i] != "```"; i++ {
			b.code += lines[i] + "\n"
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// quickStartEnv is the environment of fleetcam as the server block starts
// it: the assignments before make run.
func quickStartEnv(t *testing.T, b readmeBlock) env {
	t.Helper()
	cmd, _, _ := strings.Cut(strings.TrimSpace(b.code), "#")
	fields := strings.Fields(cmd)
	if len(fields) < 2 || strings.Join(fields[len(fields)-2:], " ") != "make run" || strings.Contains(b.code, "\n\n") {
		t.Fatalf("README.md:%d: the server block is %q, want one line: settings, then make run", b.line, b.code)
	}
	e := env{}
	for _, f := range fields[:len(fields)-2] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			t.Fatalf("README.md:%d: %q is not a setting", b.line, f)
		}
		e[k] = v
	}
	return e
}

// checkout makes a directory that looks like the repository, with its
// own data, bin and devicesim-state: the top-level entries of the
// repository linked into it.
func checkout(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, e := range entries {
		switch e.Name() {
		case ".git", "data", "bin", "devicesim-state":
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// lineLog collects a process's output and wakes those waiting for a line.
type lineLog struct {
	mu      sync.Mutex
	text    strings.Builder
	changed chan struct{}
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.text.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}

// wait returns the first submatch of re in the output after from, waiting
// up to timeout.
func (l *lineLog) wait(t *testing.T, what string, from int, re *regexp.Regexp, timeout time.Duration) (string, int) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		text, changed := l.text.String(), l.changed
		l.mu.Unlock()
		if loc := re.FindStringSubmatchIndex(text[from:]); loc != nil {
			return text[from+loc[2] : from+loc[3]], from + loc[1]
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%s: not within %s; output:\n%s", what, timeout, text[from:])
		}
	}
}

// startGroup starts cmd in a process group of its own, which the test
// ends with everything it started.
func startGroup(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
}

// readmeScale makes the README's commands fit a test: what each replaces
// must be in a shell block.
var readmeScale = map[string]string{
	"-devices 10000": "-devices 20",
	"-duration 5m":   "-duration 10s",
}

// TestReadmeFirstHour runs the README's quick start and load mode as
// written, in a directory that looks like a fresh checkout, against a
// fleetcam started with the settings of its make run line: sign-in,
// organization, device, webhook receiver, simulated dashcam, events and
// GPS, live view, then ten thousand (here twenty) load devices added by
// the simulator. A command that breaks fails it.
func TestReadmeFirstHour(t *testing.T) {
	t.Parallel()
	const blockTimeout = 3 * time.Minute // go run and make sim compile on a loaded machine
	blocks := readmeBlocks(t)
	if len(blocks) == 0 || blocks[0].kind != "server" {
		t.Fatalf("README.md's first block to run must be make run, got %+v", blocks)
	}
	dir := checkout(t)

	e := quickStartEnv(t, blocks[0])
	for k, v := range testEnv(filepath.Join(dir, "data")) {
		e[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := newLogSink()
	exit := make(chan int, 1)
	go func() { exit <- run(ctx, nil, e.get, io.Discard, logs) }()
	t.Cleanup(func() { cancel(); <-exit })
	var httpAddr string
	select {
	case httpAddr = <-logs.addr:
	case code := <-exit:
		t.Fatalf("fleetcam exited with %d: %s", code, logs)
	case <-time.After(patience):
		t.Fatalf("fleetcam did not start: %s", logs)
	}
	mqttAddr := regexp.MustCompile(`"msg":"fleetcam started".*"mqtt":"([^"]+)"`).FindStringSubmatch(logs.String())
	if mqttAddr == nil {
		t.Fatalf("no MQTT address in the start-up line: %s", logs)
	}
	base, broker := "http://"+httpAddr, "tcp://"+mqttAddr[1]

	// The shell of the second terminal; set -e ends it at the first
	// command that fails, and the trap reports the failure as the end of
	// the block.
	shellOut := newLineLog()
	shell := exec.Command("bash", "--norc", "--noprofile")
	shell.Dir = dir
	shell.Env = append(os.Environ(), "FLEETCAM="+base, "MQTT="+broker)
	shell.Stdout, shell.Stderr = shellOut, shellOut
	stdin, err := shell.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	startGroup(t, shell)
	io.WriteString(stdin, `set -euo pipefail; trap 'printf "\n__block_done %d\n" $?' EXIT`+"\n")
	done := regexp.MustCompile(`__block_done (\d+)\n`)
	runBlock := func(b readmeBlock, code string) string {
		t.Helper()
		from := len(shellOut.String())
		fmt.Fprintf(stdin, "%s\nprintf '\\n__block_done %%d\\n' $?\n", code)
		status, _ := shellOut.wait(t, fmt.Sprintf("README.md:%d to finish", b.line), from, done, blockTimeout)
		out := shellOut.String()[from:]
		if status != "0" {
			t.Fatalf("README.md:%d exited with %s:\n%s", b.line, status, out)
		}
		if strings.Contains(out, `"error":"`) {
			t.Fatalf("README.md:%d got an error from the API:\n%s", b.line, out)
		}
		return out
	}

	scaled := map[string]bool{}
	var receiver *lineLog
	var live string
	for _, b := range blocks[1:] {
		switch b.kind {
		case "server":
			t.Fatalf("README.md:%d: a second make run", b.line)
		case "terminal":
			out := newLineLog()
			term := exec.Command("bash", "--norc", "--noprofile", "-euo", "pipefail", "-c", b.code)
			term.Dir = dir
			term.Env = append(os.Environ(), "MQTT="+broker, "HOOKS=127.0.0.1:0")
			term.Stdout, term.Stderr = out, out
			startGroup(t, term)
			if strings.Contains(b.code, "webhookecho") {
				addr, _ := out.wait(t, fmt.Sprintf("README.md:%d: the webhook receiver to listen", b.line), 0,
					regexp.MustCompile(`listening on http://(\S+)/`), blockTimeout)
				fmt.Fprintf(stdin, "HOOKS=%s\n", addr) // where the receiver listens: no fixed port
				receiver = out
			}
		case "shell":
			code := b.code
			for from, to := range readmeScale {
				if strings.Contains(code, from) {
					code, scaled[from] = strings.ReplaceAll(code, from, to), true
				}
			}
			out := runBlock(b, code)
			if strings.Contains(b.code, "connect-media") {
				// Opened at once, as the README says: a stream nobody
				// watches stops.
				live = strings.TrimSpace(out[:strings.Index(out, "__block_done")])
				if !strings.HasPrefix(live, base+"/v2/media/live/") {
					t.Fatalf("README.md:%d printed %q, want a live view URL of %s", b.line, live, base)
				}
				watchLive(t, live)
			}
		}
	}
	for from := range readmeScale {
		if !scaled[from] {
			t.Errorf("no README block runs %q any more; update readmeScale", from)
		}
	}

	// What the commands left: a token, the organization with the dashcam,
	// its events listed, a webhook received, a live view that plays.
	vars := runBlock(readmeBlock{line: 0}, `printf '%s %s %s\n' "$TOKEN" "$ORG" "$IMEI"`)
	var tok, org, imei string
	if n, _ := fmt.Sscan(vars, &tok, &org, &imei); n != 3 {
		t.Fatalf("the quick start left TOKEN ORG IMEI as %q", vars)
	}
	c := client{t: t, base: base}
	if status, out := c.call("GET", "/v2/devices/"+imei, tok, nil); status != http.StatusOK || fmt.Sprint(dig(out, "data", "organizationId")) != org {
		t.Fatalf("device %s: %d %v, want it in organization %s", imei, status, out, org)
	}
	if out := shellOut.String(); !strings.Contains(out, `"imei":"`+imei+`","eventType":"`) {
		t.Fatalf("the quick start listed no event of %s:\n%s", imei, out)
	}
	if receiver == nil {
		t.Fatal("no README block starts the webhook receiver")
	}
	receiver.wait(t, "a webhook of the dashcam at the receiver", 0, regexp.MustCompile(`(POST /events webhook-id=\S+ .*`+imei+`)`), blockTimeout)
	if live == "" {
		t.Fatal("no README block asks for the live view")
	}
	if status, out := c.call("GET", "/v2/organizations/"+org+"/devices?limit=100", tok, nil); status != http.StatusOK || len(dig(out, "data").([]any)) != 21 {
		raw, _ := json.Marshal(out)
		t.Fatalf("organization %s devices after the load run: %d %s, want the dashcam and 20 load devices", org, status, raw)
	}
}

// watchLive opens a live view URL as a browser does and reads one frame.
func watchLive(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	media, params, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if res.StatusCode != http.StatusOK || media != "multipart/x-mixed-replace" {
		t.Fatalf("live view: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	part, err := multipart.NewReader(bufio.NewReader(res.Body), params["boundary"]).NextPart()
	if err != nil {
		t.Fatalf("live view: no frame: %v", err)
	}
	if ct := part.Header.Get("Content-Type"); ct != "image/jpeg" {
		t.Fatalf("live view: a frame of %q", ct)
	}
}

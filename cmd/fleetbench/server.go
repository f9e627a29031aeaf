package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetcam/fleetcam/store/blob"
)

// benchSigningKey signs the API tokens of the benchmarked fleetcam; the
// store it runs on is thrown away after the run.
const benchSigningKey = "62656e63682d6f6e6c792d7369676e696e672d6b65792d6e6f742d7365637265"

// server is a fleetcam child process on loopback ports of its own choosing.
type server struct {
	cmd     *exec.Cmd
	dataDir string
	http    string // host:port of the API
	mqtt    string // host:port of the MQTT listener
	pprof   string // host:port of the profiles, when enabled
	startup time.Duration
	exited  chan struct{}
	waitErr error
	logf    *os.File
	nodeID  string // in a cluster

	mu   sync.Mutex
	jobs map[string]bool // the jobs whose lock it logged taking
}

// serverOptions tune one fleetcam start.
type serverOptions struct {
	bin     string
	dataDir string
	// postgresURL is the database fleetcam keeps its records in; empty: the
	// bbolt file in dataDir.
	postgresURL string
	// maxConns overrides store.maxConns when positive.
	maxConns int
	logPath  string
	pprof    bool
	// commitDelay overrides mqtt.commitDelay when not negative.
	commitDelay time.Duration
	// natsURL and nodeID make fleetcam a node of a cluster; the cluster's
	// jobs move to another node within a second of a node's death.
	natsURL, nodeID string
	// mediaDir is the media directory the nodes of a cluster share.
	mediaDir string
	// mediaS3 keeps media in a bucket instead of a directory.
	mediaS3 *blob.S3Options
}

// startServer writes a configuration, starts fleetcam and waits for its
// "fleetcam started" log line, which names the bound addresses.
func startServer(ctx context.Context, o serverOptions) (*server, error) {
	var extra strings.Builder
	if o.commitDelay >= 0 {
		fmt.Fprintf(&extra, "  commitDelay: %s\n", o.commitDelay)
	}
	cfg := fmt.Sprintf(`dataDir: %q
logLevel: info
http:
  addr: 127.0.0.1:0
mqtt:
  addr: 127.0.0.1:0
  # Every simulated device connects from 127.0.0.1: the per-address limit
  # would otherwise cap the whole fleet.
  connectRatePerIP: 1000000
  connectBurstPerIP: 1000000
%sauth:
  signingKey: %q
  bcryptCost: 4
webhooks:
  allowPrivateTargets: true
  initialBackoff: 200ms
`, o.dataDir, extra.String(), benchSigningKey)
	if o.pprof {
		cfg += "debug:\n  pprofAddr: 127.0.0.1:0\n"
	}
	if o.postgresURL != "" {
		cfg += fmt.Sprintf("store:\n  postgresURL: %q\n", o.postgresURL)
		if o.maxConns > 0 {
			cfg += fmt.Sprintf("  maxConns: %d\n", o.maxConns)
		}
	}
	if o.natsURL != "" {
		cfg += fmt.Sprintf("cluster:\n  natsURL: %q\n  nodeId: %q\n  jobLockRetry: 1s\nmedia:\n  dir: %q\n", o.natsURL, o.nodeID, o.mediaDir)
	}
	if s3 := o.mediaS3; s3 != nil {
		cfg += fmt.Sprintf("media:\n  s3:\n    endpoint: %q\n    bucket: %q\n    region: %q\n    accessKey: %q\n    secretKey: %q\n    pathStyle: true\n",
			s3.Endpoint, s3.Bucket, s3.Region, s3.AccessKey, s3.SecretKey)
	}
	cfgPath := filepath.Join(filepath.Dir(o.dataDir), filepath.Base(o.dataDir)+".yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(o.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.bin, "serve", "-config", cfgPath)
	cmd.Env = append(os.Environ(), "GOTRACEBACK=all")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd.Stdout = logf
	s := &server{cmd: cmd, dataDir: o.dataDir, exited: make(chan struct{}), logf: logf, nodeID: o.nodeID, jobs: map[string]bool{}}
	began := time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", o.bin, err)
	}
	ready := make(chan struct{})
	go s.readLog(stderr, ready)
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	select {
	case <-ready:
		s.startup = time.Since(began)
		return s, nil
	case <-s.exited:
		logf.Close()
		return nil, fmt.Errorf("fleetcam exited during start-up (%v); see %s", s.waitErr, o.logPath)
	case <-time.After(3 * time.Minute):
		s.kill()
		return nil, fmt.Errorf("fleetcam did not start within 3 minutes; see %s", o.logPath)
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	}
}

// readLog copies the child's log to the log file and signals the start-up line.
func (s *server) readLog(r io.Reader, ready chan<- struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	signalled := false
	for sc.Scan() {
		line := sc.Bytes()
		s.logf.Write(append(line, '\n'))
		var m struct {
			Msg   string `json:"msg"`
			Job   string `json:"job"`
			HTTP  string `json:"http"`
			MQTT  string `json:"mqtt"`
			Pprof string `json:"pprof"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		if m.Msg == "job lock taken; running the job on this node" {
			s.mu.Lock()
			s.jobs[m.Job] = true
			s.mu.Unlock()
		}
		if !signalled && m.Msg == "fleetcam started" {
			s.http, s.mqtt, s.pprof = m.HTTP, m.MQTT, m.Pprof
			signalled = true
			close(ready)
		}
	}
}

// took reports whether the node logged taking the lock of job.
func (s *server) took(job string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[job]
}

// running reports whether the process has not exited.
func (s *server) running() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// brokerURL is the MQTT URL devices connect to.
func (s *server) brokerURL() string { return "tcp://" + s.mqtt }

// stop asks fleetcam to shut down gracefully and waits for it.
func (s *server) stop() error {
	defer s.logf.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		var exit *exec.ExitError
		if errors.As(s.waitErr, &exit) {
			return fmt.Errorf("fleetcam exited with %v", s.waitErr)
		}
		return nil
	case <-time.After(60 * time.Second):
		s.kill()
		return errors.New("fleetcam did not stop within 60s of SIGTERM; killed")
	}
}

// kill ends fleetcam with SIGKILL, as a power cut would, and waits for it.
func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// metrics scrapes the child's Prometheus metrics: name{labels} → value.
func (s *server) metrics() (map[string]float64, error) {
	resp, err := http.Get("http://" + s.http + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

// metricSum adds the values of every series of name whose labels contain
// each of the given label pairs (e.g. `result="stored"`).
func metricSum(m map[string]float64, name string, labels ...string) float64 {
	var sum float64
	for k, v := range m {
		base, rest, _ := strings.Cut(k, "{")
		if base != name {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(rest, l)
		}
		if ok {
			sum += v
		}
	}
	return sum
}

// profile saves a CPU profile of the next d into path, when profiles are on.
func (s *server) profile(ctx context.Context, d time.Duration, path string) error {
	if s.pprof == "" {
		return nil
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", s.pprof, max(1, int(d.Seconds())))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// collect makes the server collect garbage (through its heap profile
// endpoint) and saves the profile into path when save is set.
func (s *server) collect(path string, save bool) error {
	if s.pprof == "" {
		return errors.New("fleetcam runs without profiles")
	}
	resp, err := http.Get("http://" + s.pprof + "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if !save {
		_, err := io.Copy(io.Discard, resp.Body)
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// settle waits until fleetcam has stored what was still in its pipeline
// when a load stopped, at most limit, so that one load's backlog does not
// spill into the next one's measurement. It is idle when, for half a
// second, its count of ingested messages stands still and it uses almost
// no CPU (a commit of a large backlog can take seconds without a message
// counted, but not without CPU). It returns how long that took.
func (s *server) settle(ctx context.Context, limit time.Duration) (time.Duration, error) {
	const poll = 250 * time.Millisecond
	began := time.Now()
	last, still := -1.0, 0
	cpu, _ := procCPU(s.cmd.Process.Pid)
	for time.Since(began) < limit {
		if err := sleep(ctx, poll); err != nil {
			return time.Since(began), err
		}
		m, err := s.metrics()
		if err != nil {
			return time.Since(began), err
		}
		n := metricSum(m, "fleetcam_mqtt_ingest_messages_total")
		now, _ := procCPU(s.cmd.Process.Pid)
		if n == last && now-cpu < poll/20 {
			if still++; still == 2 {
				return time.Since(began), nil
			}
		} else {
			still = 0
		}
		last, cpu = n, now
	}
	return time.Since(began), fmt.Errorf("fleetcam was still storing a backlog %s after the load stopped", limit)
}

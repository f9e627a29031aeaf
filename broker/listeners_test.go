package broker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pahopackets "github.com/eclipse/paho.golang/packets"
	"github.com/fleetcam/fleetcam/broker/protocol"
	"github.com/fleetcam/fleetcam/configs"
	"github.com/fleetcam/fleetcam/store"
	"github.com/fleetcam/fleetcam/store/storetest"
	"github.com/gorilla/websocket"
	"github.com/mochi-mqtt/server/v2/packets"
)

// truncatedSubscribe is an MQTT 5 SUBSCRIBE whose only filter lacks its
// options byte. mochi-mqtt's packet decoder (v2.7.9) indexes past the end of
// it; the MQTT server checks the packet's structure first and finds it
// malformed.
var truncatedSubscribe = []byte{0x82, 0x08, 0x30, 0x30, 0x00, 0x00, 0x03, 0x30, 0x30, 0x30}

func TestMalformedPacketClosesOnlyThatConnection(t *testing.T) {
	e := newEnv(t, nil)
	bad, good := e.addDevice(1), e.addDevice(2)
	goodDev, _ := e.bootstrap(good)

	rc, ack := e.rawConnect(5, bad, bad, e.bootstrapPassword(bad))
	if ack.ReasonCode != 0 {
		t.Fatalf("connack %#x", ack.ReasonCode)
	}
	rc.WriteBytes(truncatedSubscribe)
	rc.EndedWith(packets.ErrMalformedPacket) // the broker closes this connection and nothing else
	waitFor(t, "malformed-packet device offline", func() bool { return e.link(bad).Presence == store.PresenceOffline })
	if e.srv.Online(bad) {
		t.Fatal("closed connection still registered")
	}
	if n := e.metric("fleetcam_mqtt_connection_panics_total", nil); n != 0 {
		t.Errorf("fleetcam_mqtt_connection_panics_total = %v, want 0", n)
	}

	// The server and the other device carry on.
	if pr, err := goodDev.publish(protocol.TopicStatus, protocol.Status{Firmware: "3.12", State: "online"}); err != nil || pr.ReasonCode != 0 {
		t.Fatalf("other device after the malformed packet: %v %+v", err, pr)
	}
	again, _ := e.bootstrap(bad)
	if _, err := again.publish(protocol.TopicStatus, protocol.Status{Firmware: "3.12", State: "online"}); err != nil {
		t.Fatalf("reconnect after the malformed packet: %v", err)
	}
}

func TestWebSocketListener(t *testing.T) {
	e := newEnv(t, func(c *configs.Config) { c.MQTT.WSAddr = "127.0.0.1:0" })
	id := e.addDevice(1)
	c, _, err := (&websocket.Dialer{Subprotocols: []string{"mqtt"}}).Dial("ws://"+e.srv.WSAddr()+"/mqtt", nil)
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.connect(id, e.bootstrapPassword(id), connectOpts{clean: true, subscribe: true,
		conn: pahopackets.NewThreadSafeConn(&wsConn{Conn: c.NetConn(), c: c})})
	if err != nil {
		t.Fatal(err)
	}
	var g protocol.TokenGrant
	d.decode(d.next(protocol.TopicToken, 1), &g)
	if pr, err := d.publish(protocol.TopicStatus, protocol.Status{Firmware: "3.12", State: "online"}); err != nil || pr.ReasonCode != 0 {
		t.Fatalf("publish over websocket: %v", err)
	}
	if e.link(id).Firmware != "3.12" {
		t.Fatal("status over websocket not stored")
	}
}

func TestTLSListener(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSignedCert(t, dir)
	raw, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(raw)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *configs.Config) {
		c.MQTT.TLSAddr, c.MQTT.TLSCert, c.MQTT.TLSKey = "127.0.0.1:0", certFile, keyFile
	})
	id := e.addDevice(1)
	conn, err := tls.Dial("tcp", e.srv.TLSAddr(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.connect(id, e.bootstrapPassword(id), connectOpts{clean: true, subscribe: true, conn: pahopackets.NewThreadSafeConn(conn)})
	if err != nil {
		t.Fatal(err)
	}
	var g protocol.TokenGrant
	d.decode(d.next(protocol.TopicToken, 1), &g)
	if g.Token == "" {
		t.Fatal("no token over TLS")
	}
	// The served certificate's expiry is a metric, for an alert before it lapses.
	if got, want := e.metric("fleetcam_mqtt_tls_certificate_expiry_timestamp_seconds", nil), float64(leaf.NotAfter.Unix()); got != want {
		t.Fatalf("certificate expiry metric %v, want %v", got, want)
	}
}

func TestNoCertificateMetricWithoutTLS(t *testing.T) {
	e := newEnv(t, nil)
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if strings.Contains(mf.GetName(), "certificate") {
			t.Fatalf("%s exported without a TLS listener", mf.GetName())
		}
	}
}

func TestTLSListenerNeedsReadableCertificate(t *testing.T) {
	cfg := configs.Default()
	cfg.MQTT.Addr, cfg.MQTT.TLSAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.MQTT.TLSCert, cfg.MQTT.TLSKey = filepath.Join(t.TempDir(), "missing.pem"), "missing.key"
	db := storetest.Open(t)
	defer db.Close()
	s, err := New(cfg, db, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil {
		s.Close()
		t.Fatal("started without a certificate")
	}
}

func selfSignedCert(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fleetcam test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// The WebSocket writer sets the socket's write deadline to its own on every
// message; the MQTT server's deadline must survive that, or a device that
// stops reading blocks a write, and what waits on it, for good.
func TestWebSocketWritesKeepTheirDeadline(t *testing.T) {
	conns := make(chan net.Conn, 1)
	release := make(chan struct{})
	ws, err := listenWS("127.0.0.1:0", func(c net.Conn) { conns <- c; <-release }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	defer close(release)
	c, _, err := (&websocket.Dialer{Subprotocols: []string{"mqtt"}}).Dial("ws://"+ws.Addr()+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := <-conns
	done := make(chan error, 1)
	go func() { // the client reads nothing: the socket buffers fill, then a write waits
		_ = sc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		chunk := make([]byte, 1<<20)
		for {
			if _, err := sc.Write(chunk); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("write ended with %v, want a timeout", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("a write to a client that reads nothing outlived its 200 ms deadline by 2 minutes")
	}
}

func TestStartAfterCloseFails(t *testing.T) {
	e := newEnv(t, nil)
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	// The MQTT server is closed for good: a listener bound now would never
	// be served.
	if err := e.srv.Start(); err == nil {
		t.Fatal("Start after Close succeeded")
	}
}

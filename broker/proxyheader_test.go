package broker

import (
	"net"
	"net/netip"
	"testing"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/pires/go-proxyproto"

	"github.com/fleetcam/fleetcam/broker/mqttd/mqtttest"
	"github.com/fleetcam/fleetcam/configs"
)

// viaBalancer dials the broker as a load balancer would: a PROXY header
// of the given version naming src, then the device's bytes.
func (e *env) viaBalancer(version byte, src string) *mqtttest.Client {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.srv.Addr())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	if version != 0 {
		h := proxyproto.HeaderProxyFromAddrs(version, net.TCPAddrFromAddrPort(mustAddrPort(e.t, src)), conn.RemoteAddr())
		if _, err := h.WriteTo(conn); err != nil {
			e.t.Fatal(err)
		}
	}
	return mqtttest.New(e.t, conn, 5)
}

func mustAddrPort(t *testing.T, s string) netip.AddrPort {
	t.Helper()
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		t.Fatal(err)
	}
	return ap
}

// connectAs sends a CONNECT of imei with password on rc and returns the
// CONNACK's reason code, or -1 when the connection ended first.
func connectAs(rc *mqtttest.Client, imei, password string) int {
	if _, err := rc.Conn().Write(rc.Encode(mqtttest.ConnectPacket(imei, func(pk *packets.Packet) {
		pk.Connect.UsernameFlag, pk.Connect.Username = true, []byte(imei)
		pk.Connect.PasswordFlag, pk.Connect.Password = true, []byte(password)
	}))); err != nil {
		return -1
	}
	pk, err := rc.ReadWithin(mqtttest.Patience)
	if err != nil || pk.FixedHeader.Type != packets.Connack {
		return -1
	}
	return int(pk.ReasonCode)
}

// TestProxyHeadersFromTrustedBalancers: behind a balancer listed in
// mqtt.trustedProxies, the device's address is the one the PROXY header
// names (v1 and v2), for its link and for the per-address connect limit;
// the balancer's connections must carry the header.
func TestProxyHeadersFromTrustedBalancers(t *testing.T) {
	e := newEnv(t, func(c *configs.Config) {
		c.MQTT.TrustedProxies = []string{"127.0.0.0/8"}
		c.MQTT.ConnectRatePerIP, c.MQTT.ConnectBurstPerIP = 0.001, 1
	})
	a, b, c := e.addDevice(1), e.addDevice(2), e.addDevice(3)
	if code := connectAs(e.viaBalancer(1, "198.51.100.7:40001"), a, e.bootstrapPassword(a)); code != 0 {
		t.Fatalf("a device through the balancer (PROXY v1): CONNACK %d", code)
	}
	if got := e.link(a).RemoteAddr; got != "198.51.100.7:40001" {
		t.Fatalf("the device's remote address is %q, want the one of the PROXY header", got)
	}
	if code := connectAs(e.viaBalancer(2, "[2001:db8::9]:40002"), b, e.bootstrapPassword(b)); code != 0 {
		t.Fatalf("another device through the balancer (PROXY v2, IPv6): CONNACK %d", code)
	}
	if got := e.link(b).RemoteAddr; got != "[2001:db8::9]:40002" {
		t.Fatalf("the device's remote address is %q, want the one of the PROXY header", got)
	}
	// The connect limit counts the device's address, not the balancer's:
	// a second connection from 198.51.100.7 is over its budget of one.
	if code := connectAs(e.viaBalancer(2, "198.51.100.7:40003"), c, e.bootstrapPassword(c)); code != int(packets.ErrConnectionRateExceeded.Code) {
		t.Fatalf("a second connection from the same device address: CONNACK %d, want 0x%02X", code, packets.ErrConnectionRateExceeded.Code)
	}
	// A trusted balancer's connection without the header is refused.
	if code := connectAs(e.viaBalancer(0, ""), c, e.bootstrapPassword(c)); code != -1 {
		t.Fatalf("a connection from the balancer without a PROXY header: CONNACK %d, want the connection closed", code)
	}
}

// TestProxyHeadersFromOthersAreNotRead: a PROXY header from an address
// that is not a trusted balancer is not honoured (it is no MQTT packet);
// without one such a connection is served as usual.
func TestProxyHeadersFromOthersAreNotRead(t *testing.T) {
	e := newEnv(t, func(c *configs.Config) { c.MQTT.TrustedProxies = []string{"10.0.0.0/8"} })
	a := e.addDevice(1)
	if code := connectAs(e.viaBalancer(2, "198.51.100.7:40001"), a, e.bootstrapPassword(a)); code != -1 {
		t.Fatalf("a PROXY header from an untrusted address: CONNACK %d, want the connection closed", code)
	}
	if code := connectAs(e.viaBalancer(0, ""), a, e.bootstrapPassword(a)); code != 0 {
		t.Fatalf("a direct connection: CONNACK %d", code)
	}
	if host, _, _ := net.SplitHostPort(e.link(a).RemoteAddr); host != "127.0.0.1" {
		t.Fatalf("the direct device's remote address is %q", e.link(a).RemoteAddr)
	}
}

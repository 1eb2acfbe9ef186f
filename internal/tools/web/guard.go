package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrBlockedAddress is returned (wrapped) when a URL resolves to an address
// fetch_url (or the browser) may not reach: loopback, private, link-local, unspecified,
// multicast or otherwise reserved, unless configuration allows it.
var ErrBlockedAddress = errors.New("address is not publicly routable and is blocked")

// reserved are ranges that are not public unicast beyond what netip's
// predicates cover (loopback, private, link-local, multicast,
// unspecified). Together they cover every prefix the IANA IPv4 and IPv6
// Special-Purpose Address Registries mark as not globally reachable
// (guard_test.go lists them). Entries broader than the registry's:
// 192.0.0.0/24 and 2001::/23 are refused whole, although a few anycast
// service addresses inside them (PCP, TURN, AMT, AS112, ORCHIDv2) are
// globally reachable — none is a web server.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated), with :: and ::1
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use IPv4/IPv6 translation
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("100:0:0:1::/64"),  // dummy prefix
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments: Teredo 2001::/32, benchmarking, ORCHID
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("3fff::/20"),       // documentation
	netip.MustParsePrefix("5f00::/16"),       // segment routing (SRv6) SIDs
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// embedded v4-in-v6 ranges whose low 32 bits are an IPv4 address to check.
var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

// Guard decides which addresses fetch_url and the browser's proxy may
// connect to: public unicast addresses, and what the configuration allows
// (everything with allowPrivate; allowlisted host names, addresses, CIDR
// prefixes and exact host:port pairs). Safe for concurrent use.
type Guard struct {
	allowPrivate bool
	hosts        map[string]bool         // lower-case host names allowed whatever they resolve to
	hostPorts    map[string]bool         // lower-case "host:port" pairs allowed whatever the host resolves to
	prefixes     []netip.Prefix          // addresses allowed even when not public
	addrPorts    map[netip.AddrPort]bool // address and port pairs allowed even when not public
}

// NewGuard builds a Guard. allow lists host names, IP addresses, CIDR
// prefixes ("10.0.0.0/8") and "host:port" pairs ("127.0.0.1:8080",
// "[::1]:8080", "intranet.local:8443"): a pair allows only that port.
func NewGuard(allowPrivate bool, allow []string) (*Guard, error) {
	g := &Guard{allowPrivate: allowPrivate, hosts: map[string]bool{}, hostPorts: map[string]bool{}, addrPorts: map[netip.AddrPort]bool{}}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
		case strings.Contains(a, "/"):
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, fmt.Errorf("allowed host %q: %w", a, err)
			}
			g.prefixes = append(g.prefixes, p.Masked())
		default:
			if ip, err := netip.ParseAddr(strings.Trim(a, "[]")); err == nil {
				g.prefixes = append(g.prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
				continue
			}
			if ap, err := netip.ParseAddrPort(a); err == nil {
				g.addrPorts[netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())] = true
				continue
			}
			if host, port, err := net.SplitHostPort(a); err == nil {
				if _, perr := strconv.ParseUint(port, 10, 16); perr != nil || host == "" {
					return nil, fmt.Errorf("allowed host %q: bad port", a)
				}
				g.hostPorts[hostPort(host, port)] = true
				continue
			}
			g.hosts[normHost(a)] = true
		}
	}
	return g, nil
}

func normHost(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

func hostPort(host, port string) string { return net.JoinHostPort(normHost(host), port) }

// hostAllowed reports whether host (a name from a URL) with port ("" when
// unknown) is on the allowlist.
func (g *Guard) hostAllowed(host, port string) bool {
	return g.hosts[normHost(host)] || (port != "" && g.hostPorts[hostPort(host, port)])
}

// AllowsPrivate reports whether every address is allowed (allow_private).
func (g *Guard) AllowsPrivate() bool { return g.allowPrivate }

// CheckURL refuses non-HTTP schemes and, early and with a clear message,
// literal IP addresses (and localhost names) the guard would refuse at
// dial time anyway. Host names that resolve are checked when dialled.
func (g *Guard) CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("only http and https URLs can be fetched, not %q", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return errors.New("the URL has no host")
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return g.CheckHost(host, port)
}

// CheckHost is CheckURL for a host and port (a proxy's CONNECT target).
func (g *Guard) CheckHost(host, port string) error {
	if g.hostAllowed(host, port) {
		return nil
	}
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		p, _ := strconv.ParseUint(port, 10, 16)
		return g.check(netip.AddrPortFrom(ip, uint16(p)))
	}
	if h := normHost(host); h == "localhost" || strings.HasSuffix(h, ".localhost") {
		if !g.allowPrivate {
			return fmt.Errorf("%w: %s", ErrBlockedAddress, host)
		}
	}
	return nil
}

// check returns nil when ap may be dialled.
func (g *Guard) check(ap netip.AddrPort) error {
	ip := ap.Addr().Unmap()
	if g.allowPrivate || public(ip) || g.addrPorts[netip.AddrPortFrom(ip, ap.Port())] {
		return nil
	}
	for _, p := range g.prefixes {
		if p.Contains(ip) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s", ErrBlockedAddress, ip)
}

// public reports whether ip is a public unicast address.
func public(ip netip.Addr) bool {
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() ||
		ip.IsUnspecified() {
		return false
	}
	for _, p := range reserved {
		if p.Contains(ip) {
			return false
		}
	}
	if ip.Is6() && (nat64.Contains(ip) || sixTo4.Contains(ip)) {
		b := ip.As16()
		var v4 [4]byte
		if nat64.Contains(ip) {
			copy(v4[:], b[12:16])
		} else {
			copy(v4[:], b[2:6])
		}
		return public(netip.AddrFrom4(v4))
	}
	return true
}

// DialContext returns a dial function that connects to addr ("host:port")
// with the guard enforced on the resolved address at connect time, so
// every DNS answer, rebinding and redirect target is checked. Allowlisted
// host names skip the check.
func (g *Guard) DialContext(timeout time.Duration) func(ctx context.Context, network, addr string) (net.Conn, error) {
	guarded := &net.Dialer{
		Timeout: timeout,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %q is not an IP address and port", ErrBlockedAddress, address)
			}
			return g.check(ap)
		},
	}
	open := &net.Dialer{Timeout: timeout}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err == nil && g.hostAllowed(host, port) {
			return open.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
}

package web

import (
	"net/netip"
	"testing"
)

// notGloballyReachable is every entry of the IANA IPv4 and IPv6
// Special-Purpose Address Registries whose "Globally Reachable" is False
// (iana.org/assignments/iana-ipv4-special-registry and
// iana-ipv6-special-registry), plus multicast and the deprecated
// site-local and IPv4-compatible ranges. fetch_url must refuse every
// address in them.
var notGloballyReachable = []struct {
	prefix, name string
}{
	// IPv4
	{"0.0.0.0/8", `"This network" (RFC 791)`},
	{"0.0.0.0/32", `"This host on this network" (RFC 1122)`},
	{"10.0.0.0/8", "private use (RFC 1918)"},
	{"100.64.0.0/10", "shared address space (RFC 6598)"},
	{"127.0.0.0/8", "loopback (RFC 1122)"},
	{"169.254.0.0/16", "link local (RFC 3927)"},
	{"172.16.0.0/12", "private use (RFC 1918)"},
	{"192.0.0.0/24", "IETF protocol assignments (RFC 6890)"},
	{"192.0.0.0/29", "IPv4 service continuity prefix (RFC 7335)"},
	{"192.0.0.8/32", "IPv4 dummy address (RFC 7600)"},
	{"192.0.0.170/32", "NAT64/DNS64 discovery (RFC 8880)"},
	{"192.0.0.171/32", "NAT64/DNS64 discovery (RFC 8880)"},
	{"192.0.2.0/24", "documentation TEST-NET-1 (RFC 5737)"},
	{"192.168.0.0/16", "private use (RFC 1918)"},
	{"198.18.0.0/15", "benchmarking (RFC 2544)"},
	{"198.51.100.0/24", "documentation TEST-NET-2 (RFC 5737)"},
	{"203.0.113.0/24", "documentation TEST-NET-3 (RFC 5737)"},
	{"240.0.0.0/4", "reserved (RFC 1112)"},
	{"255.255.255.255/32", "limited broadcast (RFC 919)"},
	{"224.0.0.0/4", "multicast (RFC 5771; not in the registry)"},
	// IPv6
	{"::1/128", "loopback (RFC 4291)"},
	{"::/128", "unspecified (RFC 4291)"},
	{"::ffff:0:0/96", "IPv4-mapped (RFC 4291)"},
	{"64:ff9b:1::/48", "IPv4-IPv6 translation, local use (RFC 8215)"},
	{"100::/64", "discard-only (RFC 6666)"},
	{"100:0:0:1::/64", "dummy IPv6 prefix (RFC 9780)"},
	{"2001::/23", "IETF protocol assignments (RFC 2928)"},
	{"2001::/32", "Teredo (RFC 4380)"},
	{"2001:2::/48", "benchmarking (RFC 5180)"},
	{"2001:10::/28", "ORCHID, deprecated (RFC 4843)"},
	{"2001:db8::/32", "documentation (RFC 3849)"},
	{"3fff::/20", "documentation (RFC 9637)"},
	{"5f00::/16", "segment routing SIDs (RFC 9602)"},
	{"fc00::/7", "unique local (RFC 4193)"},
	{"fe80::/10", "link-local unicast (RFC 4291)"},
	{"fec0::/10", "site-local, deprecated (RFC 3879; not in the registry)"},
	{"ff00::/8", "multicast (RFC 4291; not in the registry)"},
	{"::/96", "IPv4-compatible, deprecated (RFC 4291; not in the registry)"},
}

// samples are addresses of p: the first, the last and two inside.
func samples(p netip.Prefix) []netip.Addr {
	first := p.Masked().Addr()
	b := first.AsSlice()
	last := append([]byte(nil), b...)
	for i := p.Bits(); i < len(b)*8; i++ {
		last[i/8] |= 1 << (7 - i%8)
	}
	mid := append([]byte(nil), b...)
	if p.Bits() < len(b)*8 {
		mid[p.Bits()/8] |= 1 << (7 - p.Bits()%8) // the first host bit
	}
	mid[len(mid)-1] |= 0x01
	odd := append([]byte(nil), b...)
	for i := p.Bits(); i < len(b)*8; i += 3 {
		odd[i/8] |= 1 << (7 - i%8)
	}
	out := []netip.Addr{first}
	for _, s := range [][]byte{last, mid, odd} {
		a, _ := netip.AddrFromSlice(s)
		out = append(out, a)
	}
	return out
}

func TestSpecialPurposeRegistriesAreRefused(t *testing.T) {
	g, err := NewGuard(false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range notGloballyReachable {
		t.Run(tc.prefix, func(t *testing.T) {
			p := netip.MustParsePrefix(tc.prefix)
			addrs := samples(p)
			if tc.prefix == "::ffff:0:0/96" {
				// Mapped addresses are the IPv4 address they carry
				// (the dialer connects over IPv4): check mapped
				// forms of refused IPv4 addresses.
				addrs = []netip.Addr{netip.MustParseAddr("::ffff:0.0.0.0"), netip.MustParseAddr("::ffff:127.0.0.1"),
					netip.MustParseAddr("::ffff:169.254.169.254"), netip.MustParseAddr("::ffff:255.255.255.255")}
			}
			for _, a := range addrs {
				if err := g.check(netip.AddrPortFrom(a, 80)); err == nil {
					t.Errorf("%s (%s, %s) is allowed", a, tc.prefix, tc.name)
				}
			}
		})
	}
	// Global unicast next to the refused ranges stays allowed.
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "192.0.1.1", "198.20.0.1", "2001:200::1", "2001:4860:4860::8888",
		"2606:4700:4700::1111", "64:ff9b::808:808", "3001::1", "2002:808:808::1"} {
		if err := g.check(netip.AddrPortFrom(netip.MustParseAddr(a), 443)); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
}

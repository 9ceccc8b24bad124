//! Special-use IP addresses: the ranges a granted *name* may never lead to unless the grant
//! names the address itself.
//!
//! A name the operator granted (`https://api.example.com`) is meant to reach that service on
//! the internet. If its DNS answer is a loopback, private, link-local or cloud-metadata address,
//! following it would let a plugin (or whoever controls the name's DNS) reach the host itself or
//! its private network. Addresses that embed an IPv4 address (IPv4-mapped, IPv4-compatible,
//! NAT64, 6to4) are judged by the IPv4 address they carry.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// Why an address is special, for refusal records.
pub type SpecialUse = &'static str;

const V4_RANGES: &[(&str, &str)] = &[
    ("0.0.0.0/8", "unspecified"),
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared (CGNAT)"),
    ("127.0.0.0/8", "loopback"),
    ("169.254.169.254/32", "cloud metadata"),
    ("169.254.0.0/16", "link-local"),
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
];

const V6_RANGES: &[(&str, &str)] = &[
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("100::/64", "discard"),
    ("2001::/23", "IETF protocol assignments"),
    ("2001:db8::/32", "documentation"),
    ("fd00:ec2::254/128", "cloud metadata"),
    ("fc00::/7", "unique local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
];

/// The special use of `ip`, or `None` for an ordinary internet address.
pub fn special_use(ip: IpAddr) -> Option<SpecialUse> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => special_v4(v4).or_else(|| special_v6(v6)),
            None => special_v6(v6),
        },
    }
}

/// The IPv4 address an IPv6 address stands for or carries: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) and 6to4 (`2002:aabb:ccdd::`).
pub fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..5] == [0, 0, 0, 0, 0] && (s[5] == 0xffff || (s[5] == 0 && u32::from(tail) > 1)) {
        return Some(tail);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(tail);
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8));
    }
    None
}

/// The canonical form of `ip`: an IPv4-mapped IPv6 address becomes the IPv4 address.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether `net` contains `ip`, comparing IPv4-mapped addresses as the IPv4 address they are.
pub fn net_contains(net: &IpNet, ip: IpAddr) -> bool {
    match (net, canonical(ip)) {
        (IpNet::V4(net), IpAddr::V4(ip)) => net.contains(&ip),
        (IpNet::V6(net), IpAddr::V6(ip)) => net.contains(&ip),
        _ => false,
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<SpecialUse> {
    if ip == Ipv4Addr::BROADCAST {
        return Some("broadcast");
    }
    V4_RANGES.iter().find_map(|(net, why)| {
        let net: Ipv4Net = net.parse().unwrap_or_else(|_| unreachable!("the table holds valid IPv4 ranges"));
        net.contains(&ip).then_some(*why)
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<SpecialUse> {
    V6_RANGES.iter().find_map(|(net, why)| {
        let net: Ipv6Net = net.parse().unwrap_or_else(|_| unreachable!("the table holds valid IPv6 ranges"));
        net.contains(&ip).then_some(*why)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn special(ip: &str) -> Option<SpecialUse> {
        special_use(ip.parse().expect("ip"))
    }

    #[test]
    fn every_class_the_host_must_not_reach_by_name_is_special() {
        for (ip, why) in [
            ("127.0.0.1", "loopback"),
            ("127.255.1.2", "loopback"),
            ("::1", "loopback"),
            ("10.1.2.3", "private"),
            ("172.31.0.1", "private"),
            ("192.168.1.1", "private"),
            ("fd12::1", "unique local"),
            ("169.254.1.1", "link-local"),
            ("fe80::1", "link-local"),
            ("100.100.0.1", "shared (CGNAT)"),
            ("0.0.0.0", "unspecified"),
            ("::", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("ff02::1", "multicast"),
            ("169.254.169.254", "cloud metadata"),
            ("fd00:ec2::254", "cloud metadata"),
            ("255.255.255.255", "broadcast"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:169.254.169.254", "cloud metadata"),
            ("::ffff:10.0.0.1", "private"),
            ("::127.0.0.1", "loopback"),
            ("64:ff9b::a9fe:a9fe", "cloud metadata"),
            ("2002:7f00:1::", "loopback"),
        ] {
            assert_eq!(special(ip), Some(why), "{ip}");
        }
    }

    #[test]
    fn ordinary_internet_addresses_are_not_special() {
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111", "::ffff:93.184.216.34", "172.32.0.1", "100.128.0.1"] {
            assert_eq!(special(ip), None, "{ip}");
        }
    }

    #[test]
    fn ranges_compare_mapped_addresses_as_ipv4() {
        let net: IpNet = "127.0.0.0/8".parse().expect("net");
        assert!(net_contains(&net, "::ffff:127.0.0.2".parse().expect("ip")));
        assert!(!net_contains(&net, "::1".parse().expect("ip")));
    }
}

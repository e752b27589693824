//! SSRF guard: which addresses `http_get`/`http_request` may reach.
//!
//! Checked after DNS resolution (a custom resolver drops forbidden addresses,
//! so a name that resolves, or rebinds, to 127.0.0.1 is refused), for IP
//! literals in URLs (which skip the resolver), and again at every redirect hop.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// An address range in CIDR notation, such as `10.0.0.0/8` or `fd00::/8`
/// (a bare address is a single-host range). Backed by the `ipnet` crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet(ipnet::IpNet);

/// A CIDR string that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid address range {input:?}: {reason}")]
pub struct IpNetError {
    input: String,
    reason: &'static str,
}

impl FromStr for IpNet {
    type Err = IpNetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| IpNetError {
            input: s.to_owned(),
            reason,
        };
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| err("expected an IPv4 or IPv6 address before `/`"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max),
            None => Some(max),
        }
        .ok_or_else(|| err("the prefix length must be 0-32 for IPv4, 0-128 for IPv6"))?;
        ipnet::IpNet::new(addr, prefix)
            .map(Self)
            .map_err(|_| err("the prefix length must be 0-32 for IPv4, 0-128 for IPv6"))
    }
}

impl fmt::Display for IpNet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.0.addr(), self.0.prefix_len())
    }
}

impl IpNet {
    /// Whether `ip` is in this range (IPv4-mapped IPv6 addresses count as IPv4).
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.contains(&canonical(ip))
    }
}

/// Maps `::ffff:a.b.c.d` to `a.b.c.d` so IPv4 rules apply to it.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        IpAddr::V4(v4) => IpAddr::V4(v4),
    }
}

/// IPv4 ranges refused by default, with the reason shown to the model.
const FORBIDDEN_V4: &[(&str, &str)] = &[
    ("0.0.0.0/8", "unspecified (\"this network\")"),
    ("10.0.0.0/8", "private (RFC 1918)"),
    ("100.64.0.0/10", "shared address space (CGNAT)"),
    ("127.0.0.0/8", "loopback"),
    // 169.254.169.254 is the cloud metadata endpoint.
    ("169.254.0.0/16", "link-local or cloud metadata"),
    ("172.16.0.0/12", "private (RFC 1918)"),
    (
        "192.0.0.0/24",
        "reserved for documentation, benchmarking or protocol assignments",
    ),
    (
        "192.0.2.0/24",
        "reserved for documentation, benchmarking or protocol assignments",
    ),
    ("192.88.99.0/24", "6to4 relay anycast (deprecated)"),
    ("192.168.0.0/16", "private (RFC 1918)"),
    (
        "198.18.0.0/15",
        "reserved for documentation, benchmarking or protocol assignments",
    ),
    (
        "198.51.100.0/24",
        "reserved for documentation, benchmarking or protocol assignments",
    ),
    (
        "203.0.113.0/24",
        "reserved for documentation, benchmarking or protocol assignments",
    ),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("255.255.255.255/32", "broadcast"),
];

/// IPv6 ranges refused by default (IPv4-mapped, IPv4-translated, NAT64, 6to4 and
/// IPv4-compatible addresses are also judged by the IPv4 address they embed).
const FORBIDDEN_V6: &[(&str, &str)] = &[
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("64:ff9b:1::/48", "local-use NAT64 (RFC 8215)"),
    ("100::/64", "discard-only"),
    ("2001::/32", "Teredo tunnel"),
    ("2001:db8::/32", "reserved for documentation"),
    ("3fff::/20", "reserved for documentation"),
    ("fc00::/7", "unique local (private)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated private)"),
    ("ff00::/8", "multicast"),
];

/// The forbidden ranges, parsed once.
fn forbidden_table() -> &'static [(ipnet::IpNet, &'static str)] {
    static TABLE: std::sync::OnceLock<Vec<(ipnet::IpNet, &'static str)>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        FORBIDDEN_V4
            .iter()
            .chain(FORBIDDEN_V6)
            // The table is a constant checked by `every_forbidden_range_parses`.
            .filter_map(|(net, why)| net.parse().ok().map(|n| (n, *why)))
            .collect()
    })
}

/// Why an address is forbidden by default, or `None` when it is public.
pub(crate) fn forbidden_reason(ip: IpAddr) -> Option<&'static str> {
    let ip = canonical(ip);
    if let Some((_, why)) = forbidden_table().iter().find(|(net, _)| net.contains(&ip)) {
        return Some(why);
    }
    match ip {
        // Translated, NAT64 and 6to4 addresses reach the IPv4 address they embed.
        IpAddr::V6(v6) => embedded_v4(v6).and_then(|v4| forbidden_reason(IpAddr::V4(v4))),
        IpAddr::V4(_) => None,
    }
}

/// The IPv4 address inside NAT64 (`64:ff9b::/96`), IPv4-translated (`::ffff:0:0:0/96`, SIIT,
/// RFC 2765), 6to4 (`2002::/16`) and deprecated IPv4-compatible (`::a.b.c.d`) addresses.
/// IPv4-mapped addresses (`::ffff:0:0/96`) are mapped before the table is searched.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let from = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0]
        || s[..6] == [0, 0, 0, 0, 0xffff, 0]
        || s[..6] == [0, 0, 0, 0, 0, 0]
    {
        Some(from(s[6], s[7]))
    } else if s[0] == 0x2002 {
        Some(from(s[1], s[2]))
    } else {
        None
    }
}

/// Cloud instance metadata endpoints (AWS, GCP, Azure, OpenStack at 169.254.169.254, AWS's
/// IPv6 fd00:ec2::254, Alibaba's 100.100.100.200).
fn is_metadata(ip: IpAddr) -> bool {
    const V4: [Ipv4Addr; 2] = [
        Ipv4Addr::new(169, 254, 169, 254),
        Ipv4Addr::new(100, 100, 100, 200),
    ];
    const V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x0254);
    match canonical(ip) {
        IpAddr::V4(v4) => V4.contains(&v4),
        IpAddr::V6(v6) => v6 == V6 || embedded_v4(v6).is_some_and(|v4| V4.contains(&v4)),
    }
}

/// Hosts and ranges opened despite being forbidden by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AllowList {
    pub(crate) hosts: Vec<String>,
    pub(crate) nets: Vec<IpNet>,
}

impl AllowList {
    pub(crate) fn allows_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.');
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    pub(crate) fn allows_ip(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|n| n.contains(ip))
    }

    /// Whether a cloud metadata address is opened by name: the address itself as a host, or
    /// a range holding only it (`169.254.169.254/32`). A wider range or a host name does not
    /// open it, so allow-listing `169.254.0.0/16` or an internal name that resolves there
    /// (DNS rebinding) never reaches the instance's credentials.
    fn names_exactly(&self, ip: IpAddr) -> bool {
        let literal = ip.to_string();
        self.hosts
            .iter()
            .any(|h| h.trim_matches(['[', ']']).eq_ignore_ascii_case(&literal))
            || self
                .nets
                .iter()
                .any(|n| n.0.prefix_len() == n.0.max_prefix_len() && n.contains(ip))
    }

    /// `Err(reason)` when `ip` may not be reached from `host`.
    pub(crate) fn check(&self, host: &str, ip: IpAddr) -> Result<(), String> {
        match forbidden_reason(ip) {
            None => Ok(()),
            Some(_)
                if is_metadata(ip)
                    && (self.allows_host(host) || self.allows_ip(ip))
                    && !self.names_exactly(ip) =>
            {
                Err(format!(
                    "{ip} is a cloud metadata address; it is refused unless allow-listed by \
                 itself (as a host `{ip}` or the range `{ip}/{}`)",
                    if ip.is_ipv4() { 32 } else { 128 }
                ))
            }
            Some(_) if self.allows_host(host) || self.allows_ip(ip) => Ok(()),
            Some(reason) => {
                let what = if host.trim_matches(['[', ']']) == ip.to_string() {
                    format!("{ip} is")
                } else {
                    format!("{host} resolves to {ip}, which is")
                };
                Err(format!(
                    "{what} in a forbidden range ({reason}); requests there are refused \
                     unless the host allow-lists it"
                ))
            }
        }
    }
}

/// A resolver that drops forbidden addresses after resolution.
pub(crate) struct GuardedResolver {
    pub(crate) allow: Arc<AllowList>,
}

/// Every resolved address of a name was forbidden.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(pub(crate) String);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow = Arc::clone(&self.allow);
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refusals = Vec::new();
            let allowed: Vec<SocketAddr> = resolved
                .into_iter()
                .filter(|addr| match allow.check(&host, addr.ip()) {
                    Ok(()) => true,
                    Err(reason) => {
                        refusals.push(reason);
                        false
                    }
                })
                .collect();
            match (allowed.is_empty(), refusals.into_iter().next()) {
                (true, Some(reason)) => Err(Box::new(Refused(reason)) as _),
                _ => Ok(Box::new(allowed.into_iter()) as Addrs),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn forbids_internal_ranges_and_allows_public_ones() {
        for bad in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::7f00:1",
            "64:ff9b:1:ffff::1",
            "2002:7f00:1::",
            "ff02::1",
            "2001:db8::1",
            "2001:0:4136:e378::1",
            "100::1",
            "192.88.99.1",
            "::127.0.0.1",
        ] {
            assert!(
                forbidden_reason(ip(bad)).is_some(),
                "{bad} should be forbidden"
            );
        }
        for good in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700::1111",
            "100.128.0.1",
            "192.0.78.9",
        ] {
            assert_eq!(forbidden_reason(ip(good)), None, "{good} should be allowed");
        }
    }

    #[test]
    fn embedded_ipv4_addresses_are_judged_by_the_ipv4_rules() {
        let cases = [
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:0:127.0.0.1", Some("loopback")),
            ("::ffff:0:a9fe:a9fe", Some("link-local or cloud metadata")),
            ("::ffff:0:10.0.0.1", Some("private (RFC 1918)")),
            ("64:ff9b::7f00:1", Some("loopback")),
            ("64:ff9b::c0a8:1", Some("private (RFC 1918)")),
            ("::ffff:0:5db8:d822", None),
            ("::ffff:93.184.216.34", None),
        ];
        let got: Vec<_> = cases
            .iter()
            .map(|(addr, _)| (*addr, forbidden_reason(ip(addr))))
            .collect();
        assert_eq!(got, cases);
        let allow = AllowList::default();
        assert!(
            allow
                .check("[::ffff:0:7f00:1]", ip("::ffff:0:7f00:1"))
                .unwrap_err()
                .starts_with("::ffff:0:7f00:1 is in a forbidden range (loopback)")
        );
    }

    #[test]
    fn every_forbidden_range_parses() {
        assert_eq!(
            forbidden_table().len(),
            FORBIDDEN_V4.len() + FORBIDDEN_V6.len()
        );
        assert_eq!(
            forbidden_reason(ip("64:ff9b:1::1")),
            Some("local-use NAT64 (RFC 8215)")
        );
        // The well-known NAT64 prefix itself is fine when the IPv4 inside is public.
        assert_eq!(forbidden_reason(ip("64:ff9b::5db8:d822")), None);
    }

    #[test]
    fn nets_parse_and_match_with_mapped_addresses() {
        let net: IpNet = "127.0.0.0/8".parse().unwrap();
        assert!(net.contains(ip("127.9.9.9")) && net.contains(ip("::ffff:127.0.0.1")));
        assert!(!net.contains(ip("128.0.0.1")));
        let host: IpNet = "10.0.0.7".parse().unwrap();
        assert_eq!(host.to_string(), "10.0.0.7/32");
        let v6: IpNet = "fd00::/8".parse().unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        assert_eq!(
            "10.0.0.0/33".parse::<IpNet>().unwrap_err().to_string(),
            "invalid address range \"10.0.0.0/33\": the prefix length must be 0-32 for IPv4, 0-128 for IPv6"
        );
    }

    #[test]
    fn allow_list_opens_by_host_or_range() {
        let allow = AllowList {
            hosts: vec!["localhost".to_owned()],
            nets: vec!["10.0.0.0/8".parse().unwrap()],
        };
        assert_eq!(allow.check("LOCALHOST.", ip("127.0.0.1")), Ok(()));
        assert_eq!(allow.check("intranet", ip("10.2.3.4")), Ok(()));
        assert!(
            allow
                .check("evil.test", ip("127.0.0.1"))
                .unwrap_err()
                .contains("loopback")
        );
    }
}

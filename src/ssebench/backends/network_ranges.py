"""The address ranges an open-egress run must not reach, on every backend.

An open run reaches the internet, but not the inside: cloud metadata services
(link-local), private networks, carrier-grade NAT space and the IPv6 equivalents.
The Kubernetes backend lists the IPv4 ranges as its NetworkPolicy's exceptions; the
Docker backend drops them in the firewall (see backends/docker/firewall.py).
"""

from __future__ import annotations

PRIVATE_IPV4_RANGES = (
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "169.254.0.0/16",
)
# Unique local and link-local addresses. Docker gives a run no IPv6 at all (its
# networks are made without --ipv6, and Docker then disables IPv6 in the container).
PRIVATE_IPV6_RANGES = (
    "fc00::/7",
    "fe80::/10",
)

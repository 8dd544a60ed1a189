from __future__ import annotations

import socket
from pathlib import Path

from ssebench.backends.docker.firewall import FirewallStatus
from ssebench.cli.doctor import host_listener_check, open_egress_check, ports_open_to_all

HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"


def test_listeners_on_all_addresses_are_found(tmp_path: Path) -> None:
    tcp = tmp_path / "tcp"
    tcp.write_text(
        HEADER
        + "   0: 00000000:1F90 00000000:0000 0A 0 0 0 0 0\n"  # 0.0.0.0:8080 listening
        + "   1: 0100007F:0FA0 00000000:0000 0A 0 0 0 0 0\n"  # 127.0.0.1:4000 listening
        + "   2: 00000000:0050 0100007F:D431 01 0 0 0 0 0\n"  # established, not listening
    )
    tcp6 = tmp_path / "tcp6"
    tcp6.write_text(
        HEADER + "   0: 00000000000000000000000000000000:1A0B "
        "00000000000000000000000000000000:0000 0A 0 0 0 0 0\n"
    )
    assert ports_open_to_all((tcp, tcp6, tmp_path / "missing")) == [6667, 8080]


def test_without_the_firewall_doctor_names_a_real_listener_on_all_addresses() -> None:
    with socket.socket() as listener:
        listener.bind(("0.0.0.0", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert port in ports_open_to_all()
        check = host_listener_check(firewall_usable=False)
    assert str(port) in check.detail and not check.ok and not check.required
    assert host_listener_check(firewall_usable=True).ok


def test_doctor_says_how_open_egress_is_enforced() -> None:
    usable = open_egress_check(FirewallStatus(True, "iptables v1: rules installable"))
    assert usable.ok and "DOCKER-USER" in usable.detail and "169.254.0.0/16" in usable.detail
    refused = open_egress_check(FirewallStatus(False, "iptables is not on PATH"))
    assert not refused.ok and not refused.required
    assert "refused" in refused.detail and "iptables is not on PATH" in refused.detail

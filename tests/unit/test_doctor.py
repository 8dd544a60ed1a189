from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from ssebench.cli.doctor import ports_open_to_all

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


def test_doctor_names_a_real_listener_on_all_addresses() -> None:
    with socket.socket() as listener:
        listener.bind(("0.0.0.0", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert port in ports_open_to_all()
        done = subprocess.run(
            [sys.executable, "-m", "ssebench.cli.main", "doctor", "--json"],
            capture_output=True,
            text=True,
        )
    checks = {check["name"]: check for check in json.loads(done.stdout)["checks"]}
    assert str(port) in checks["host listeners"]["detail"]
    assert checks["host listeners"]["required"] is False

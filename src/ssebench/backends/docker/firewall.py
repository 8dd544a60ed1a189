"""The host firewall rules of a Docker run's network (iptables, as Docker uses it).

Every rule is keyed on the run network's bridge interface and carries the comment
ssebench:<network name>, by which the run's cleanup and `ssebench runs prune` find it
again. Each rule stands alone (no rule relies on the order of others), so rules of
concurrent runs may be inserted and removed in any order.

- Open egress (chain DOCKER-USER, which Docker 20.10 and later consults before its own
  forwarding rules): what leaves the run's bridge for another interface is dropped when
  it is bound for a private range (network_ranges). Traffic inside the bridge (the run
  and the proxy, nothing else is on it) is not touched.
- Every run (chain INPUT): a connection the run opens to this host itself (its
  gateway address, any address of the host, a port published by another container on
  the host) is dropped. Replies to connections the host opened (`ssebench runs
  endpoint`, the proxy's health checks) still pass.

IPv6 needs no rule: a run's network is made without IPv6, and Docker disables IPv6 in
the container's network namespace (no address, not even link-local).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ssebench.backends.network_ranges import PRIVATE_IPV4_RANGES

IPTABLES = "iptables"
FORWARD_CHAIN = "DOCKER-USER"
HOST_CHAIN = "INPUT"
CHAINS = (FORWARD_CHAIN, HOST_CHAIN)
COMMENT_PREFIX = "ssebench:"
# Waits for the xtables lock (other runs, dockerd) rather than failing at once.
LOCK_WAIT_SECONDS = "30"
COMMAND_TIMEOUT_SECONDS = 60.0
# A bridge that never exists: the doctor's probe rule matches nothing.
PROBE_BRIDGE = "sse-doctor0"


class FirewallError(Exception):
    """An iptables command failed; the message is iptables' own last line."""


@dataclass(frozen=True)
class Rule:
    """One iptables rule: its chain and its match and target (no -A/-I/-D)."""

    chain: str
    spec: tuple[str, ...]

    def argv(self, action: str) -> list[str]:
        return [IPTABLES, "-w", LOCK_WAIT_SECONDS, action, self.chain, *self.spec]


def comment_of(network: str) -> str:
    return f"{COMMENT_PREFIX}{network}"


def run_rules(network: str, bridge: str, *, open_egress: bool) -> list[Rule]:
    """The rules of the run network network, whose bridge interface is bridge."""
    comment = ("-m", "comment", "--comment", comment_of(network))
    rules = [
        Rule(
            HOST_CHAIN,
            (
                "-i", bridge,
                "-m", "conntrack", "!", "--ctstate", "ESTABLISHED,RELATED",
                *comment, "-j", "DROP",
            ),
        )
    ]  # fmt: skip
    if open_egress:
        rules += [
            Rule(
                FORWARD_CHAIN,
                ("-i", bridge, "!", "-o", bridge, "-d", cidr, *comment, "-j", "DROP"),
            )
            for cidr in PRIVATE_IPV4_RANGES
        ]
    return rules


def _iptables(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            timeout=COMMAND_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError:
        raise FirewallError(f"{IPTABLES} is not installed") from None
    except subprocess.TimeoutExpired:
        raise FirewallError(
            f"{IPTABLES} did not answer within {COMMAND_TIMEOUT_SECONDS:.0f} s"
        ) from None


def _reason(completed: subprocess.CompletedProcess[str]) -> str:
    lines = (completed.stderr.strip() or completed.stdout.strip()).splitlines()
    return lines[-1] if lines else f"{IPTABLES} exited with status {completed.returncode}"


def install(rules: Iterable[Rule]) -> None:
    """Insert rules; on a failure remove those inserted and raise FirewallError."""
    inserted: list[Rule] = []
    for rule in rules:
        completed = _iptables(rule.argv("-I"))
        if completed.returncode != 0:
            for done in inserted:
                _iptables(done.argv("-D"))
            raise FirewallError(_reason(completed))
        inserted.append(rule)


def listed_rules(chain: str) -> list[Rule]:
    """The rules of chain that carry a comment of ours. Raises FirewallError."""
    completed = _iptables([IPTABLES, "-w", LOCK_WAIT_SECONDS, "-S", chain])
    if completed.returncode != 0:
        raise FirewallError(_reason(completed))
    found = []
    for line in completed.stdout.splitlines():
        words = shlex.split(line)
        if len(words) < 2 or words[0] != "-A" or words[1] != chain:
            continue
        if any(word.startswith(COMMENT_PREFIX) for word in words):
            found.append(Rule(chain, tuple(words[2:])))
    return found


def network_of(rule: Rule) -> str | None:
    """The run network a rule of ours belongs to (from its comment)."""
    words = list(rule.spec)
    for index, word in enumerate(words[:-1]):
        if word == "--comment" and words[index + 1].startswith(COMMENT_PREFIX):
            return words[index + 1].removeprefix(COMMENT_PREFIX)
    return None


def remove(network: str) -> None:
    """Remove every rule of network; nothing to do when it has none.

    Raises FirewallError when iptables cannot be asked (then a run has no rules to
    remove either: they could not have been installed).
    """
    for chain in CHAINS:
        for rule in listed_rules(chain):
            if network_of(rule) == network:
                completed = _iptables(rule.argv("-D"))
                if completed.returncode != 0 and "does not exist" not in completed.stderr:
                    raise FirewallError(_reason(completed))


def networks_with_rules() -> set[str]:
    """The run networks that have rules. Empty when iptables cannot be asked."""
    found: set[str] = set()
    for chain in CHAINS:
        try:
            rules = listed_rules(chain)
        except FirewallError:
            continue
        found.update(network for rule in rules if (network := network_of(rule)))
    return found


@dataclass(frozen=True)
class FirewallStatus:
    usable: bool
    detail: str


def status() -> FirewallStatus:
    """Whether run rules can be installed here: iptables present, Docker's chain
    present, and a probe rule (on a bridge that does not exist) inserted and removed."""
    if shutil.which(IPTABLES) is None:
        return FirewallStatus(False, f"{IPTABLES} is not on PATH")
    try:
        listed = _iptables([IPTABLES, "-w", LOCK_WAIT_SECONDS, "-S", FORWARD_CHAIN])
        if listed.returncode != 0:
            return FirewallStatus(
                False, f"cannot read the chain {FORWARD_CHAIN}: {_reason(listed)}"
            )
        probe = run_rules(f"doctor-probe-{PROBE_BRIDGE}", PROBE_BRIDGE, open_egress=True)
        install(probe)
        for rule in probe:
            _iptables(rule.argv("-D"))
    except FirewallError as error:
        return FirewallStatus(False, f"cannot install rules: {error}")
    version = _iptables([IPTABLES, "--version"]).stdout.strip()
    return FirewallStatus(True, f"{version}: {FORWARD_CHAIN} and {HOST_CHAIN} rules installable")

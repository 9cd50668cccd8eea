"""What a local launch's Ray listens on: every socket of the driver and of every process under it (GCS,
raylet, agents, the workers that ran tasks), none beyond loopback. IPv4 addresses may show as IPv4-mapped
IPv6 ones (`::ffff:127.0.0.1`); `::` and 0.0.0.0 are exposure."""

from __future__ import annotations

import ipaddress

import psutil
import pytest
import ray

from gridlab.execution.ray_session import ray_session

pytestmark = pytest.mark.slow


def listening(process: psutil.Process) -> list[tuple[str, str]]:
    found = []
    for proc in [process, *process.children(recursive=True)]:
        try:
            found += [(proc.name(), c.laddr.ip) for c in proc.net_connections("inet") if c.status == "LISTEN"]
        except psutil.Error:  # ended while we looked
            continue
    return found


def is_loopback(ip: str) -> bool:
    address = ipaddress.ip_address(ip)
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def test_loopback_reads_mapped_addresses():
    assert is_loopback("127.0.0.1") and is_loopback("::ffff:127.0.0.1") and is_loopback("::1")
    assert not is_loopback("::") and not is_loopback("0.0.0.0") and not is_loopback("::ffff:10.0.0.1")


@ray.remote
def _node_ip() -> str:
    return ray.util.get_node_ip_address()


def test_a_local_launchs_ray_listens_on_loopback_only():
    with ray_session(None):
        assert set(ray.get([_node_ip.remote() for _ in range(4)])) == {"127.0.0.1"}  # workers started, on loopback
        sockets = listening(psutil.Process())
    assert len({name for name, _ in sockets}) >= 3, f"too few listeners to be Ray's: {sockets}"
    exposed = [(name, ip) for name, ip in sockets if not is_loopback(ip)]
    assert exposed == []

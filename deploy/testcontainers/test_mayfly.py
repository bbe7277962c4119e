"""Testcontainers for Python (testcontainers on PyPI, pytest): mayfly for one test module, ready
once it logs "waiting for connections". The image is built from mayfly's Containerfile
(`podman build -t mayfly:local .`) or pulled from where you pushed it."""
import pymongo
import pytest
from testcontainers.core.container import DockerContainer
from testcontainers.core.waiting_utils import wait_for_logs


@pytest.fixture(scope="module")
def mayfly_uri():
    with DockerContainer("mayfly:local").with_command("--storage memory").with_exposed_ports(27017) as container:
        wait_for_logs(container, "waiting for connections", timeout=60)
        host, port = container.get_container_host_ip(), container.get_exposed_port(27017)
        yield f"mongodb://{host}:{port}/?directConnection=true"


def test_pings(mayfly_uri):
    with pymongo.MongoClient(mayfly_uri) as client:
        assert client.admin.command("ping")["ok"] == 1

"""``regroup serve --brokers N`` and the cluster actions of ``regroup ctl``, end to end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from regroup.cli.main import main
from regroup.server.clients.wire_client import WireClient

SRC = Path(__file__).resolve().parents[2] / "src"
ENV = {**os.environ, "PYTHONPATH": str(SRC)}


def test_serve_three_brokers_and_drive_them_with_ctl(capsys: pytest.CaptureFixture[str]) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "regroup.cli.main", "serve", "--port", "0", "--brokers", "3",
         "--racks", "a,b,c", "--control"],
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        ports: dict[int, int] = {}
        while len(ports) < 3:
            line = proc.stderr.readline()
            assert line, "serve ended before listing its brokers"
            if line.startswith("  broker "):
                _, node, _, address, *_ = line.split()
                ports[int(node)] = int(address.rsplit(":", 1)[1])
        assert len(set(ports.values())) == 3

        def ctl(node: int, *argv: str) -> Any:
            code = main(["ctl", "--bootstrap-server", f"127.0.0.1:{ports[node]}", *argv])
            out = capsys.readouterr()
            assert code == 0, out.err
            return json.loads(out.out)

        described = ctl(0, "brokers")
        assert [b["rack"] for b in described["brokers"]] == ["a", "b", "c"]
        assert ctl(0, "create-topic", "orders", "3") is None
        before = ctl(0, "coordinator-of", "my-group")
        assert before == 0  # __consumer_offsets-12, 12 % 3
        # Asked on the broker it stops: the answer still arrives.
        stopped = ctl(0, "broker-stop", "0")
        assert stopped["broker"] == 0
        with pytest.raises(OSError):
            WireClient("127.0.0.1", ports[0], timeout=2)
        assert ctl(1, "coordinator-of", "my-group") == 1
        assert ctl(1, "move-coordinator", "my-group", "2")["partition"] == 12
        assert ctl(2, "coordinator-of", "my-group") == 2
        assert ctl(1, "move-leader", "orders", "0", "2")["leader"] == 2
        assert ctl(1, "broker-start", "0")["broker"] == 0
        assert ctl(0, "broker-outage", "1", "1")["restart_in_s"] == 1
        assert not ctl(0, "brokers")["brokers"][1]["running"]
        deadline = time.monotonic() + 10
        while not ctl(0, "brokers")["brokers"][1]["running"]:
            assert time.monotonic() < deadline, "broker 1 did not come back"
            time.sleep(0.05)
        assert main(["ctl", "--bootstrap-server", f"127.0.0.1:{ports[0]}", "broker-stop", "9"]) == 2
        err = capsys.readouterr().err
        assert "no broker 9" in err and err.count("\n") == 1
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--brokers", "0"], "--brokers must be at least 1"),
        (["--brokers", "3", "--racks", "a,b"], "one rack per broker"),
        (["--brokers", "3", "--port", "65534"], "no room for 3 brokers"),
    ],
)
def test_serve_refuses_a_bad_cluster_in_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1

"""The command line loads the wire server only for the commands that use it.

``serve`` and ``groups`` need ``regroup.server`` (asyncio, sockets, kio);
``assign``, ``simulate``, ``demo`` and the rest must not pay for it at start-up
(kio also pulls in hypothesis when it is installed, which drops a
``.hypothesis`` folder into the user's working directory).
"""

from __future__ import annotations

import subprocess
import sys


def test_starting_the_cli_does_not_load_the_wire_server() -> None:
    probe = (
        "import sys, regroup.cli.main; "
        "loaded = sorted(m for m in sys.modules if m.startswith(('regroup.server', 'kio'))); "
        "print(','.join(loaded))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""

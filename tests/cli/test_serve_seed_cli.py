"""``regroup serve --seed``: classic member ids fixed by a seed, refused with a data dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from regroup.cli.errors import UsageError
from regroup.cli.main import build_parser
from regroup.cli.serve import options_from_args
from regroup.testing import Broker, ControlError


def test_serve_takes_a_seed() -> None:
    args = build_parser().parse_args(["serve", "--port", "0", "--seed", "42"])
    assert options_from_args(args).seed == 42
    assert options_from_args(build_parser().parse_args(["serve"])).seed is None


def test_a_seed_with_a_data_dir_is_refused(tmp_path: Path) -> None:
    # A restart would draw the member ids its store already holds.
    args = build_parser().parse_args(["serve", "--seed", "1", "--data-dir", str(tmp_path)])
    with pytest.raises(UsageError, match="--seed with --data-dir"):
        options_from_args(args)
    with pytest.raises(ControlError, match="seed with data_dir"):
        Broker(seed=1, data_dir=tmp_path)

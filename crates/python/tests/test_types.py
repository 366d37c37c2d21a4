"""The stubs hold what tests/typing_usage.py expects of them (mypy --strict, if
installed: .ci/run installs it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_stubs_pass_mypy_strict_and_reject_a_wrong_use(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    ok = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(HERE / "typing_usage.py")],
        capture_output=True, text=True,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    wrong = tmp_path / "wrong.py"
    wrong.write_text("import seekless\nfor p, d in seekless.read(b'/d'):\n    s: str = p\n")
    bad = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(wrong)],
        capture_output=True, text=True,
    )
    assert bad.returncode == 1 and "Incompatible types" in bad.stdout, bad.stdout

"""The skip summary prints one line per reason (the suite's conftest folds skips by reason, not by file)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).resolve().parent / "conftest.py"


def test_skips_of_one_reason_in_several_files_are_one_line(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    for name in ("test_a.py", "test_b.py"):
        (tmp_path / name).write_text(
            "import pytest\n\n"
            "def test_one():\n    pytest.skip('no device here')\n\n"
            "@pytest.mark.skip(reason='no device here')\ndef test_two():\n    pass\n\n"
            "def test_runs():\n    assert True\n")
    (tmp_path / "test_c.py").write_text("import pytest\n\npytest.skip('another reason', allow_module_level=True)\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-rs", "-q", "-p", "no:cacheprovider", str(tmp_path)],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    lines = [line for line in result.stdout.splitlines() if line.startswith("SKIPPED")]
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(lines) == 2, result.stdout
    assert any(re.match(r"SKIPPED \[4\] .*: no device here$", line) for line in lines), lines
    assert any(re.match(r"SKIPPED \[1\] .*: another reason$", line) for line in lines), lines

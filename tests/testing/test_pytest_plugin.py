"""The pytest plugin as an application's project meets it: docs/testing.md's examples, as
written, are the tests of a separate project (a directory with no conftest.py), run by pytest
in a child process where the plugin comes only from the `pytest11` entry point that
pyproject.toml declares."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing.md"


def doc_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def installed_entry_points(site: Path) -> None:
    """What installing this source tree registers: its declared pytest11 entry point, in a
    distribution's metadata on `site` (the package itself comes from src/)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    dist = site / "longboat_plugin_check-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: longboat-plugin-check\nVersion: 0\n"
    )
    lines = [
        f"[{group}]" + "".join(f"\n{k} = {v}" for k, v in eps.items())
        for group, eps in declared.items()
    ]
    (dist / "entry_points.txt").write_text("\n\n".join(lines) + "\n")


def test_the_documented_examples_pass_in_a_project_without_conftest(tmp_path: Path) -> None:
    project, site = tmp_path / "app", tmp_path / "site"
    project.mkdir()
    examples = doc_examples()
    assert len(examples) == 4
    for i, code in enumerate(examples):
        (project / f"test_example_{i}.py").write_text(code)
    (project / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    installed_entry_points(site)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT / "src")])
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b5 passed\b", done.stdout), done.stdout
    assert not list(project.glob("conftest.py"))

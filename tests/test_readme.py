"""The README's Quick start commands are exactly the ones CI runs."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_quick_start_commands_are_run_verbatim_by_ci():
    readme = (ROOT / "README.md").read_text()
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.+?)\n```", quick, flags=re.S)
    assert len(commands) == 2, commands
    ci = (ROOT / ".ci" / "run").read_text()
    for command in commands:
        assert "\n" not in command.strip()
        assert command.strip() in ci, command
    assert "torch==2.13.0" in commands[0] and "sklearn_cispa" in commands[0]
    assert "pytest" in commands[1] and ".[test]" in commands[1]


def test_readme_usage_snippet_runs_and_prints_its_figures(capsys):
    readme = (ROOT / "README.md").read_text()
    usage = readme.split("## Using it", 1)[1]
    code = re.findall(r"```python\n(.+?)\n```", usage, flags=re.S)[0]
    exec(compile(code, "README.md", "exec"), {})
    printed = [float(v) for v in capsys.readouterr().out.split()]
    commented = [float(v) for v in re.findall(r"# ([0-9.]+):", code)]
    assert printed == pytest.approx(commented, abs=0.01)
    assert printed[1] < printed[0]

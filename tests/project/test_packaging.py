"""The project installs as a team would install it: a non-editable wheel holds the library and the Dagster
code location (`flywheel_dagster.assets`, `flywheel_dagster.resources`), and `flywheel turn` and the
Definitions load from a folder that is not the checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
CODE_LOCATION = {"flywheel_dagster.assets": "assets", "flywheel_dagster.resources": "resources"}


def _package_folders() -> set[str]:
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "flywheel").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    return found | set(CODE_LOCATION)


def test_every_package_folder_is_listed_in_pyproject():
    """pyproject.toml lists packages by name (the code location is mapped from its folders), so a new
    subpackage must be added there or the wheel would silently lack it."""
    setuptools_cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools_cfg["packages"])
    assert len(listed) > 10
    assert _package_folders() - listed == set(), "add these packages to pyproject.toml [tool.setuptools] packages"
    assert listed - _package_folders() == set(), "pyproject.toml lists packages that do not exist"
    assert setuptools_cfg["package-dir"] == CODE_LOCATION


def test_no_sys_path_edits_in_the_library_or_code_location():
    """The code location is installed: nothing puts the checkout on sys.path to import it. (The sandbox's
    programs set up the path of the program they run, inside the sandbox: they are not the library.)"""
    offenders = []
    for folder in ("flywheel", "assets", "resources"):
        for p in (ROOT / folder).rglob("*.py"):
            if p.name.startswith("_") and p.name != "__init__.py":
                continue  # programs run inside the sandbox (flywheel/sandbox/_*.py, repo/_runner.py, ...)
            if "sys.path.insert" in p.read_text() or "sys.path.append" in p.read_text():
                offenders.append(str(p.relative_to(ROOT)))
    assert not offenders


@pytest.mark.slow
def test_wheel_installs_and_runs_from_outside_the_checkout(tmp_path):
    """Build the wheel, install it (no deps: they come from this venv's site-packages by path, without its
    editable finder) into a fresh venv, and from an empty folder run `flywheel turn --help` and load the
    Definitions."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                    str(wheels), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(wheels.glob("flywheel-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # a plain path line: the dependencies are importable, the editable install's finder (.pth) is not run
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["FLYWHEEL_HOME"] = str(tmp_path / "home")
    outside = tmp_path / "elsewhere"
    outside.mkdir()

    def run(*cmd: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(cmd), cwd=outside, env=env, capture_output=True, text=True, timeout=300)

    where = run(str(py), "-c", "import flywheel, flywheel_dagster.assets as a; print(flywheel.__file__, a.__file__)")
    assert where.returncode == 0, where.stderr[-2000:]
    assert str(ROOT) not in where.stdout, f"imported from the checkout: {where.stdout}"
    helped = run(str(venv / "bin" / "flywheel"), "turn", "--help")
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "--set" in helped.stdout
    loaded = run(str(py), "-c", "from flywheel_dagster.assets.definitions import defs\n"
                 "print(len(list(defs.resolve_asset_graph().get_all_asset_keys())))")
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert int(loaded.stdout.strip().splitlines()[-1]) >= 10

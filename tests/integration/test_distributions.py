"""The two distributions of this repository (#73 item 7): the provider's wheel holds no emulator and registers no
pytest plugin; the sandbox (``blinkops-sandbox``, ``sandbox/``) is its own wheel, which registers the plugin and
``blink-sandbox``, and, installed alone into a fresh virtual environment, serves Blink's demo tables."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]


def _uv() -> list[str]:
    found = shutil.which("uv")
    return [found] if found else [sys.executable, "-m", "uv"]


def built(package: str | None, out: Path) -> Path:
    """Return the wheel ``uv build`` makes of the provider (None) or of a workspace member."""
    chosen = ["--package", package] if package else []
    subprocess.run([*_uv(), "build", "--wheel", "--quiet", *chosen, "-o", str(out)], cwd=ROOT, check=True, timeout=300)
    [wheel] = out.glob("*.whl")
    return wheel


def entry_points(wheel: zipfile.ZipFile) -> str:
    [name] = [name for name in wheel.namelist() if name.endswith(".dist-info/entry_points.txt")]
    return wheel.read(name).decode()


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("wheels")
    return {"provider": built(None, out / "provider"), "sandbox": built("blinkops-sandbox", out / "sandbox")}


def test_the_providers_wheel_holds_no_emulator_and_registers_no_pytest_plugin(wheels: dict[str, Path]) -> None:
    with zipfile.ZipFile(wheels["provider"]) as wheel:
        names = wheel.namelist()
        points = entry_points(wheel)
    assert any(name.startswith("blinkops_provider/hooks/") for name in names)
    assert not [name for name in names if "sandbox" in name.split("/")[0] or "/sandbox" in name]
    assert "pytest11" not in points and "blink-sandbox" not in points
    assert "blink-schema = blinkops_provider.cli.main:main" in points


def test_the_sandboxs_wheel_is_the_emulator_its_command_and_its_fixture(wheels: dict[str, Path]) -> None:
    with zipfile.ZipFile(wheels["sandbox"]) as wheel:
        names = wheel.namelist()
        points = entry_points(wheel)
    assert "blinkops_sandbox/_server.py" in names and not [n for n in names if n.startswith("blinkops_provider")]
    assert re.search(r"\[pytest11\]\s*blink_sandbox = blinkops_sandbox._pytest_plugin", points)
    assert "blink-sandbox = blinkops_sandbox.cli:main" in points


@pytest.mark.recipe
def test_the_sandbox_installed_alone_serves_the_demo(wheels: dict[str, Path], tmp_path: Path) -> None:
    """Into a fresh virtual environment, the sandbox's wheel alone (no provider, no Airflow): its command serves."""
    venv = tmp_path / "venv"
    subprocess.run([*_uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [*_uv(), "pip", "install", "--quiet", "--python", str(python), str(wheels["sandbox"])], check=True, timeout=600
    )
    listed = subprocess.run([str(python), "-m", "pip", "list"], capture_output=True, text=True, check=False).stdout
    assert "apache-airflow" not in listed and "airflow-provider-blinkops" not in listed
    server = subprocess.Popen(
        [str(venv / "bin" / "blink-sandbox"), "serve", "--api-key", "sandbox-key-0123456789"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert server.stdout is not None
        url = ""
        for line in server.stdout:
            found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
            if found:
                url = found.group(1)
                break
        assert url, "the sandbox said no URL"
        answer = requests.get(
            f"{url}/api/v1/workspace/ws-demo/table/Incidents/fields",
            headers={"BLINK-API-KEY": "sandbox-key-0123456789"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        assert "Title" in json.dumps(answer.json())
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)

"""
``blink-schema validate``: every check a plan makes of a declaration without Blink, offline.

It reads declaration files, or folders in the fleet's ``<ws_id>/<table>.json`` layout, and checks
each as a plan would (:func:`blinkops_provider.models.declaration_problems`: the JSON, the
entries' shape, the 18 types and their attributes, names and display names declared twice,
tombstones, ``backfill`` and ``type_change``). It sends nothing, needs no connection and imports no
Airflow, so a pull request's check runs in well under a second.

Each problem is one line, ``FILE:LINE: entry N ('field'): what is wrong; what is allowed`` (the
line of the entry in the file, where it can be told), or, with ``--format github``, a GitHub
Actions annotation; ``--format json`` prints a list of ``{file, line, entry, message}``. The exit
status is 0 when every declaration is valid, 1 otherwise.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TextIO

FORMATS = ("text", "github", "json")


@dataclass(frozen=True)
class Finding:
    """
    One problem of one file.

    The file, the line of its entry (None: not told), the entry's position (None: the file as a whole), and what is
    wrong.
    """

    file: str
    line: int | None
    entry: int | None
    message: str

    def text(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"

    def github(self) -> str:
        where = f"file={self.file}" + (f",line={self.line}" if self.line else "")
        said = self.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return f"::error {where}::{said}"


def declaration_files(paths: Iterable[str]) -> tuple[list[Path], list[Finding]]:
    """
    Return the files to check.

    Each file given, and each folder's ``<ws_id>/<table>.json`` files; a path that is neither, or a folder with none, is
    a finding.
    """
    files: list[Path] = []
    missing: list[Finding] = []
    for given in paths:
        path = Path(given)
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            found = sorted(path.glob("*/*.json"))
            files += found
            if not found:
                missing.append(
                    Finding(given, None, None, "holds no <ws_id>/<table>.json declaration (the fleet's layout)")
                )
        else:
            missing.append(Finding(given, None, None, "no such file or folder"))
    return files, missing


def check_file(path: Path) -> list[Finding]:
    """Return every problem of one declaration file."""
    from blinkops_provider.models import declaration_problems, entry_number

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return [Finding(str(path), None, None, f"cannot be read: {err}")]
    problems = declaration_problems(text, source=str(path))
    starts = _entry_lines(text) if problems else []  # (a valid file needs no line: not looked for)
    findings = []
    for problem in problems:
        said = problem.removeprefix(f"{path}: ").removeprefix(f"{path} ")
        entry = entry_number(said)
        line = starts[entry - 1] if entry is not None and entry <= len(starts) else _json_line(said)
        findings.append(Finding(str(path), line, entry, said))
    return findings


def _json_line(problem: str) -> int | None:
    found = re.search(r"at line (\d+), column \d+", problem)
    return int(found.group(1)) if found else None


def _entry_lines(text: str) -> list[int]:
    """
    Return the line each entry of the declaration begins on (the entries of ``fields``, or of the list).

    As far as the JSON reads; none when it does not.
    """
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return []
    entries = data.get("fields") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        return []
    lines, at = [], text.find("[", text.find('"fields"') if isinstance(data, dict) else 0) + 1
    decoder = json.JSONDecoder()
    for _ in entries:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        lines.append(text.count("\n", 0, at) + 1)
        try:
            _, at = decoder.raw_decode(text, at)
        except ValueError:
            return lines
    return lines


def validate(paths: Sequence[str], output_format: str = "text", out: TextIO | None = None) -> int:
    """
    Check every declaration under ``paths``; print the findings (to ``out``, by default stdout).

    0 when there are none, else 1.
    """
    out = out or sys.stdout
    files, findings = declaration_files(paths)
    for path in files:
        findings += check_file(path)
    if output_format == "json":
        out.write(json.dumps([asdict(finding) for finding in findings], indent=2, ensure_ascii=False) + "\n")
    else:
        for finding in findings:
            out.write((finding.github() if output_format == "github" else finding.text()) + "\n")
        if not findings:
            out.write(f"{'::notice::' if output_format == 'github' else ''}{len(files)} declaration(s) valid\n")
    return 1 if findings else 0

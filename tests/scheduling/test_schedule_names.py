"""Schedule names are one printable line of valid text (issue #31): a newline would forge lines of
``tickwork jobs list`` and of the logs, an undecodable byte gave a raw traceback. Every door a
name comes in by is checked: ``ScheduleSpec``, the decorator, ``Admin.add``, ``tickwork jobs add``
(real processes, the name given as argv bytes) and a schedule file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tickwork
from tests.support.paths import REPO
from tickwork.errors import ConfigError, DeclarationError
from tickwork.structures import ScheduleSpec

RECORD = "tests.support.jobs_for_tests:record"

BAD = [
    ("two\nlines", "U+000A"),
    ("tab\there", "U+0009"),
    ("carriage\rreturn", "U+000D"),
    ("del\x7f", "U+007F"),
    ("c1\x85control", "U+0085"),
    ("bidi\u202eoverride", "U+202E"),
    ("line\u2028separator", "U+2028"),
    ("lone\ud800surrogate", "U+D800"),
    ("undecodable\udcffbyte", "byte 0xFF"),  # what Python makes of an invalid byte in argv
]


@pytest.mark.parametrize(("name", "named"), BAD)
def test_schedule_spec_refuses_unprintable_names(name: str, named: str) -> None:
    with pytest.raises(ValueError, match=rf"^name: .*{re.escape(named)}") as caught:
        ScheduleSpec(name=name, trigger_kind="cron", expression="* * * * *", target=RECORD)
    assert "\n" not in str(caught.value)  # the message itself is one line


@pytest.mark.parametrize("name", ["nightly report", "rapport-été", "日次バッチ", "a/b:c.d", "emoji-🚀"])
def test_printable_names_are_accepted(name: str) -> None:
    assert ScheduleSpec(name=name, trigger_kind="cron", expression="* * * * *", target=RECORD).name == name


def job() -> None:
    """A module-level function, as the decorator wants (the refused declaration registers nothing)."""


def test_the_decorator_refuses_a_newline_in_a_name() -> None:
    with pytest.raises(DeclarationError, match=r"name: .*U\+000A"):
        tickwork.cron("0 3 * * *", name="forged\nINFO line")(job)


def test_admin_add_refuses_a_control_character(tmp_path: Path) -> None:
    (tmp_path / "tickwork.toml").write_text('[store]\nplugin = "sqlite"\npath = "t.db"\n')
    assert tw(tmp_path, "db", "upgrade").returncode == 0
    with tickwork.connect({"store": {"plugin": "sqlite", "path": str(tmp_path / "t.db")}}) as admin:
        with pytest.raises(ConfigError, match=r"name: .*U\+000A"):
            admin.add("two\nlines", "0 3 * * *", RECORD)
        with pytest.raises(ConfigError, match=r"name: .*byte 0xFF"):
            admin.add("bad\udcffbyte", "0 3 * * *", RECORD)
        assert admin.list() == []


def tw(cwd: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "LC_ALL": "C.UTF-8"}
    return subprocess.run([sys.executable, "-m", "tickwork", *args], cwd=cwd, env=env, capture_output=True, timeout=120)


@pytest.mark.parametrize(("name", "named"), [(b"two\nlines", "U+000A"), (b"bad\xffbyte", "byte 0xFF")])
def test_jobs_add_refuses_the_name_with_one_error_line(tmp_path: Path, name: bytes, named: str) -> None:
    (tmp_path / "tickwork.toml").write_text('[store]\nplugin = "sqlite"\npath = "t.db"\n')
    assert tw(tmp_path, "db", "upgrade").returncode == 0
    done = tw(tmp_path, "jobs", "add", name, "0 3 * * *", RECORD)
    err = done.stderr.decode("utf-8", "backslashreplace")
    assert done.returncode != 0 and done.stdout == b""
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("tickwork: error: ")]
    assert len(errors) == 1 and named in errors[0], err
    listed = tw(tmp_path, "jobs", "list", "--json")
    assert listed.returncode == 0 and listed.stdout == b"", listed


def test_a_schedule_file_names_the_line_and_the_character(tmp_path: Path) -> None:
    (tmp_path / "tickwork.toml").write_text('[store]\nplugin = "sqlite"\npath = "t.db"\n')
    entry = {"name": "forged\nline", "expression": "0 3 * * *", "target": RECORD}
    (tmp_path / "many.jsonl").write_text(json.dumps(entry) + "\n")
    assert tw(tmp_path, "db", "upgrade").returncode == 0
    done = tw(tmp_path, "jobs", "add", "--from", "many.jsonl")
    err = done.stderr.decode()
    assert done.returncode != 0 and "Traceback" not in err, err
    assert "many.jsonl:1: name: " in err and "U+000A" in err, err

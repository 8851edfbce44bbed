"""The CLI's tables on a terminal of any width: no line is longer than the terminal, every row is
one line, a table that fits is printed as it is, and ``--wide`` never cuts anything."""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tickwork.cli.output import ESSENTIAL, Column, Listing

CELL = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40)


class Terminal(io.StringIO):
    encoding = "utf-8"

    def isatty(self) -> bool:
        return True


@st.composite
def listings(draw: st.DrawFn) -> tuple[list[Column], list[list[str]]]:
    n = draw(st.integers(1, 8))
    columns = [
        Column(
            f"H{i}",
            keep=draw(st.sampled_from([5, 10, 30, 60, ESSENTIAL])),
            shrink=draw(st.none() | st.integers(1, 20)),
        )
        for i in range(n)
    ]
    rows = draw(st.lists(st.lists(CELL, min_size=n, max_size=n), min_size=1, max_size=6))
    return columns, rows


def printed(columns: list[Column], rows: list[list[str]], width: int, *, wide: bool = False) -> list[str]:
    out = Terminal()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COLUMNS", str(width))
        Listing(columns=columns, rows=rows, objects=[{} for _ in rows], empty="none", wide=wide).print(
            as_json=False, out=out
        )
    return out.getvalue().splitlines()


@settings(max_examples=300, deadline=None)
@given(listings(), st.integers(20, 200))
def test_no_line_is_longer_than_the_terminal(table: tuple[list[Column], list[list[str]]], width: int) -> None:
    columns, rows = table
    lines = printed(columns, rows, width)
    assert len(lines) == len(rows) + 1
    assert all(len(line) <= width for line in lines)
    natural = printed(columns, rows, 10_000)
    if max(len(line) for line in natural) <= width:
        assert lines == natural  # nothing is dropped or cut from a table that fits
    else:
        essential = [c.header for c in columns if c.keep >= ESSENTIAL and c.shrink is None]
        header = lines[0].split()
        # Essential columns that may not be cut stay, unless the whole line had to be cut.
        if not lines[0].endswith("…"):
            assert all(h in header for h in essential)


@settings(max_examples=100, deadline=None)
@given(listings(), st.integers(20, 200))
def test_wide_shows_every_column_in_full(table: tuple[list[Column], list[list[str]]], width: int) -> None:
    columns, rows = table
    lines = printed(columns, rows, width, wide=True)
    assert lines == printed(columns, rows, 10_000)
    assert lines[0].split() == [c.header for c in columns]


def test_a_cut_first_column_gives_way_before_any_other_is_cut() -> None:
    columns = [Column("NAME"), Column("EXPRESSION", shrink=4, cut_first=True), Column("TARGET", shrink=4)]
    rows = [["n" * 10, "e" * 20, "t" * 20]]
    # 54 wide naturally (10 + 20 + 20 and two gaps of 2): 10 too wide for 44.
    _, line = printed(columns, rows, 44)
    assert line.split() == ["n" * 10, "e" * 9 + "…", "t" * 20]
    # Past its floor, the others are cut as before (the most over its floor first).
    _, narrow = printed(columns, rows, 30)
    cells = narrow.split()
    assert cells[1] == "eee…" and cells[2].endswith("…") and len(narrow) <= 30

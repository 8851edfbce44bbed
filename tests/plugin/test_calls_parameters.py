"""``takes_no_parameters``: the code-object shortcut agrees with :func:`inspect.signature`
wherever it answers, and leaves every other callable to it."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from tickwork.plugin.calls import check_arguments, context_parameter, takes_no_parameters
from tickwork.plugin.runcontext import RunContext


def plain() -> None:
    pass


def one(x: int) -> None:
    pass


def defaulted(x: int = 1) -> None:
    pass


def star_args(*args: Any) -> None:
    pass


def star_kwargs(**kwargs: Any) -> None:
    pass


def keyword_only(*, x: int = 1) -> None:
    pass


def positional_only(x: int = 1, /) -> None:
    pass


def with_context(context: RunContext) -> None:
    pass


@functools.wraps(one)
def wraps_one() -> None:
    pass


def signature_set() -> None:
    pass


signature_set.__signature__ = inspect.signature(one)  # type: ignore[attr-defined]


class Callable0:
    def __call__(self) -> None:
        pass


class Holder:
    def method(self) -> None:
        pass


CASES: list[Callable[..., Any]] = [
    plain,
    one,
    defaulted,
    star_args,
    star_kwargs,
    keyword_only,
    positional_only,
    with_context,
    wraps_one,
    signature_set,
    lambda: None,
    lambda x: x,
    Callable0(),
    Holder().method,
    functools.partial(one, 1),
    len,
]


@pytest.mark.parametrize("func", CASES, ids=lambda f: getattr(f, "__name__", type(f).__name__))
def test_the_shortcut_says_no_parameters_only_where_inspect_finds_none(func: Callable[..., Any]) -> None:
    if takes_no_parameters(func):
        assert not inspect.signature(func).parameters


def test_the_shortcut_answers_for_plain_functions_and_no_other_kind() -> None:
    assert takes_no_parameters(plain) and takes_no_parameters(lambda: None)
    # A wrapper shows the signature it names, however its own code reads.
    assert not takes_no_parameters(wraps_one) and not takes_no_parameters(signature_set)
    assert not any(takes_no_parameters(f) for f in (one, defaulted, star_args, star_kwargs, keyword_only))
    assert not takes_no_parameters(positional_only) and not takes_no_parameters(Callable0())


def test_checks_through_the_shortcut_refuse_what_they_refused_before() -> None:
    assert context_parameter(plain) is None
    assert context_parameter(with_context) == "context"
    check_arguments(plain, {"_tickwork_mode": "thread"})  # reserved names are never passed
    with pytest.raises(TypeError, match=r"does not accept x \(it accepts: no arguments\)"):
        check_arguments(plain, {"x": 1})
    with pytest.raises(TypeError, match="no stored argument for required parameter"):
        check_arguments(wraps_one, {})  # the signature it names: (x)

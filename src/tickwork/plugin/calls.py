"""Helpers every executor needs: stored arguments for a Python callable, and reporting an
outcome exactly once (see docs/plugins.md)."""

from __future__ import annotations

import functools
import inspect
import logging
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from ..structures import Outcome
from .runcontext import RunContext

log = logging.getLogger("tickwork.calls")

#: Argument names starting with this are meant for executors (``_tickwork_mode``), never for jobs.
RESERVED_PREFIX = "_tickwork"


#: Code flags of a function taking ``*args`` or ``**kwargs``.
_VARIADIC = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def takes_no_parameters(func: object) -> bool:
    """Whether ``func`` is a plain Python function whose code declares no parameter, told from
    its code object alone. What :func:`inspect.signature` would answer (no parameters) for the
    common declared job, without building a signature: about 30 µs a function, the largest
    part of declaring 20,000 jobs. ``False`` means "ask :func:`inspect.signature`" (a wrapper
    that names another signature, a method, a callable object, or parameters)."""
    if type(func) is not types.FunctionType or hasattr(func, "__wrapped__") or hasattr(func, "__signature__"):
        return False
    code = func.__code__
    return code.co_argcount == 0 and code.co_kwonlyargcount == 0 and not code.co_flags & _VARIADIC


def context_parameter(func: Callable[..., Any]) -> str | None:
    """The name of ``func``'s parameter annotated :class:`tickwork.RunContext`, if it has one.

    String annotations (``from __future__ import annotations``) are resolved in the function's
    module; one that cannot be resolved is compared by name (``RunContext``, ``tickwork.RunContext``).
    """
    if takes_no_parameters(func):
        return None
    try:
        hints = typing.get_type_hints(func)
    except Exception:  # an unresolvable annotation elsewhere in the signature
        hints = {}
    for name, param in _parameters(func).items():
        annotation = hints.get(name, param.annotation)
        if annotation is RunContext or (
            isinstance(annotation, str) and annotation.rpartition(".")[2] == RunContext.__name__
        ):
            return name
    return None


def _parameters(func: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    """``func``'s parameters; none for a callable whose signature Python cannot read (some
    built-ins written in C, ``time:time`` say): it is called without arguments."""
    try:
        return inspect.signature(func).parameters
    except (ValueError, TypeError):
        return {}


@functools.lru_cache(maxsize=4096)
def _signature(func: Callable[..., Any]) -> tuple[frozenset[str], bool, tuple[str, ...], str | None]:
    """(parameter names, takes ``**kwargs``, required names, run-context parameter) of ``func``."""
    if takes_no_parameters(func):
        return frozenset(), False, (), None
    params = _parameters(func)
    context = context_parameter(func)
    required = tuple(
        name
        for name, p in params.items()
        if p.default is inspect.Parameter.empty
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        and name != context
    )
    var_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return frozenset(params), var_keyword, required, context


def call_arguments(
    func: Callable[..., Any], arguments: Mapping[str, Any], context: RunContext | None = None
) -> dict[str, Any]:
    """The stored arguments ``func`` receives: those it declares by name, or all of them if it
    takes ``**kwargs``; ``_tickwork*`` names are never passed. A parameter annotated
    :class:`tickwork.RunContext` receives ``context`` (an executor that has none passes ``None``,
    which only checks the stored arguments). Signatures are cached.

    :raises TypeError: naming required parameters that have no stored value
    """
    names, var_keyword, required, context_name = _signature(func)
    if not names:
        return {}
    usable = {k: v for k, v in arguments.items() if not k.startswith(RESERVED_PREFIX)}
    kwargs = usable if var_keyword else {k: v for k, v in usable.items() if k in names}
    missing = [name for name in required if name not in kwargs]
    if missing:
        raise TypeError(f"no stored argument for required parameter(s): {', '.join(missing)}")
    if context_name is not None:
        kwargs = dict(kwargs)
        kwargs.pop(context_name, None)  # the run's context, never a stored value, fills it
        if context is not None:
            kwargs[context_name] = context
    return kwargs


def check_arguments(func: Callable[..., Any], arguments: Mapping[str, Any]) -> None:
    """Refuse stored arguments ``func`` would never receive (a typo would otherwise be dropped
    silently at every run) and required parameters without one.

    :raises TypeError: naming the unknown arguments and the parameters ``func`` accepts
    """
    names, var_keyword, _required, context_name = _signature(func)
    if context_name is not None and context_name in arguments:
        raise TypeError(f"{context_name} is its tickwork.RunContext parameter, filled by the run, not stored")
    if not var_keyword:
        accepted_names = names - {context_name}
        unknown = sorted(k for k in arguments if not k.startswith(RESERVED_PREFIX) and k not in accepted_names)
        if unknown:
            accepted = ", ".join(sorted(accepted_names)) or "no arguments"
            raise TypeError(f"it does not accept {', '.join(unknown)} (it accepts: {accepted})")
    call_arguments(func, arguments)


class ReportOnce:
    """Wraps an executor's ``on_done`` so it runs exactly once, whichever of the result, a
    deadline or a shutdown comes first; an exception from the callback is logged, not raised
    into the executor's thread.

    :return: (of a call) True if this call reported the outcome, False if one was reported before
    """

    __slots__ = ("_on_done", "_pending", "run_id")

    def __init__(self, on_done: Callable[[Outcome], None], run_id: int | None = None) -> None:
        self._on_done = on_done
        self.run_id = run_id
        # One token, taken by the first report: list.pop is atomic (under the GIL, and under
        # the list's own lock without one), and cheaper than a lock of its own to create and
        # take for every run.
        self._pending = [True]

    @property
    def done(self) -> bool:
        """True once an outcome was reported."""
        return not self._pending

    def __call__(self, outcome: Outcome) -> bool:
        try:
            self._pending.pop()
        except IndexError:
            return False
        try:
            self._on_done(outcome)
        except Exception:
            log.exception("on_done callback raised for run %s", self.run_id)
        return True

"""The pages that change schedules beyond one button: the create and edit form (with its preview
of the next fire times) and actions on a selection of the schedules list. All of them need a
logged-in session and the form's CSRF token (:func:`.pages.checked_form`), and every change is
audited (:mod:`.actions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.responses import Response

from tickwork.admin import Admin
from tickwork.errors import DatabaseMissingError, ScheduleNotFoundError, StoreError

from .actions import ACTIONS, DECLARED, MAX_SELECTION, perform_many, save
from .forms import ScheduleForm, grouped, kinds, label
from .namespaces import in_namespace
from .pages import address_of, checked_form, problem, redirect, render

if TYPE_CHECKING:
    from .application import Dashboard


def _dashboard(request: Request) -> Dashboard:
    from .application import dashboard_of

    return dashboard_of(request)


def _form_page(
    request: Request, form: ScheduleForm, creating: bool, kind_names: list[str], status: int = 200
) -> Response:
    return render(
        request,
        "edit.html",
        status=status,
        form=form,
        creating=creating,
        groups=grouped(),
        label=label,
        kinds=kind_names,
    )


async def _load(request: Request, work: Any) -> Any:
    """``work(admin)`` in a worker thread, or the error page for a store problem or unknown name."""
    try:
        return await _dashboard(request).read(work, request)
    except ScheduleNotFoundError as exc:
        return problem(request, 404, str(exc))
    except (DatabaseMissingError, StoreError) as exc:
        return problem(request, 503, str(exc))


async def new_form(request: Request) -> Response:
    if not _dashboard(request).guard.enabled:
        return problem(request, 403, "actions are disabled: the dashboard has no token configured (read-only)")
    found = await _load(request, kinds)
    return found if isinstance(found, Response) else _form_page(request, ScheduleForm(), True, found)


async def edit_form(request: Request) -> Response:
    name = request.path_params["name"]
    if not _dashboard(request).guard.enabled:
        return problem(request, 403, "actions are disabled: the dashboard has no token configured (read-only)")

    def work(admin: Admin) -> tuple[ScheduleForm, list[str]] | Response:
        info = admin.get(name)
        if info.module is not None:
            return problem(request, 409, DECLARED.format(name=name, module=info.module))
        return ScheduleForm.of(info, admin), kinds(admin)

    found = await _load(request, work)
    if isinstance(found, Response):
        return found
    return _form_page(request, found[0], False, found[1])


async def _submit(request: Request, name: str | None) -> Response:
    """Preview (``do=preview``) or save the posted form; ``name``: the schedule being edited."""
    checked = await checked_form(request)
    if isinstance(checked, Response):
        return checked
    session, posted = checked
    creating = name is None
    form = ScheduleForm.posted(posted, name)
    saving = posted.get("do") != "preview"
    address = address_of(request)

    def work(admin: Admin) -> tuple[Any, list[str]] | Response:
        if not creating:
            info = admin.get(form.name)
            if info.module is not None:
                return problem(request, 409, DECLARED.format(name=form.name, module=info.module))
        if saving:
            return save(admin, form, session.who, address, creating=creating), kinds(admin)
        form.check(admin, creating=creating)
        return None, kinds(admin)

    found = await _load(request, work)
    if isinstance(found, Response):
        return found
    info, kind_names = found
    if info is not None:
        _dashboard(request).changed()
        at = "/schedules/" + quote(info.name, safe="") + in_namespace(info.namespace)
        return redirect(request, at, "create" if creating else "edit")
    return _form_page(request, form, creating, kind_names, status=200 if form.valid else 400)


async def create(request: Request) -> Response:
    return await _submit(request, None)


async def edit(request: Request) -> Response:
    return await _submit(request, request.path_params["name"])


async def bulk(request: Request) -> Response:
    """An action on the schedules ticked in the list: ``action`` and ``name`` (repeated)."""
    checked = await checked_form(request)
    if isinstance(checked, Response):
        return checked
    session, posted = checked
    action = str(posted.get("action", ""))
    if action not in ACTIONS:
        return problem(request, 400, f"action: {action!r} is not one of {', '.join(ACTIONS)}")
    names = [str(n) for n in posted.getlist("name") if str(n)]
    if not names:
        return problem(request, 400, "no schedules selected: tick the schedules to act on first")
    if len(names) > MAX_SELECTION:
        return problem(request, 400, f"at most {MAX_SELECTION} schedules at once, got {len(names)}")
    address = address_of(request)
    try:
        outcome = await _dashboard(request).read(
            lambda admin: perform_many(admin, action, names, session.who, address), request
        )
    except (DatabaseMissingError, StoreError) as exc:
        return problem(request, 503, str(exc))
    if outcome.done:
        _dashboard(request).changed()
    if outcome.refused:
        # Shown at once rather than through a redirect: the reasons are not put in a URL.
        lines = "; ".join(f"{name}: {why}" for name, why in outcome.refused[:10])
        more = f" (and {len(outcome.refused) - 10} more)" if len(outcome.refused) > 10 else ""
        done = f"{len(outcome.done)} done. " if outcome.done else "Nothing was changed. "
        return problem(request, 409, f"{done}Refused {len(outcome.refused)}{more}: {lines}")
    return redirect(request, "/?" + urlencode({"action": action, "n": str(len(outcome.done))}), "selection")

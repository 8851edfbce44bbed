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
from tickwork.admin.roles import may_act_on, namespace_in, role_needed
from tickwork.errors import DatabaseMissingError, ScheduleNotFoundError, StoreError

from .access import Forbidden, access_of, scoped, sees
from .actions import ACTIONS, DECLARED, MAX_SELECTION, Outcome, perform_many, save
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


def _may_edit(request: Request, action: str) -> Response | None:
    """The 403 page unless the caller may ``action`` (create, edit) at all; ``None``: go on (the
    posted form is checked again, with its CSRF token)."""
    access = access_of(request)
    if not access.actions_enabled:
        return problem(request, 403, "actions are disabled: the dashboard has no token configured (read-only)")
    if access.caller is not None and not access.caller.may(action):
        return problem(request, 403, f"{access.caller.described} may not {action}: that needs the admin role")
    return None


async def new_form(request: Request) -> Response:
    refused = _may_edit(request, "create")
    if refused is not None:
        return refused
    found = await _load(request, kinds)
    return found if isinstance(found, Response) else _form_page(request, ScheduleForm(), True, found)


async def edit_form(request: Request) -> Response:
    name = request.path_params["name"]
    refused = _may_edit(request, "edit")
    if refused is not None:
        return refused
    caller = access_of(request).caller

    def work(admin: Admin) -> tuple[ScheduleForm, list[str]] | Response:
        info = admin.get(name)
        if not sees(caller, info):
            return problem(request, 403, f"schedule {name!r} is outside your token's namespaces")
        if info.module is not None:
            return problem(request, 409, DECLARED.format(name=name, module=info.module))
        return ScheduleForm.of(info, admin), kinds(admin)

    found = await _load(request, work)
    if isinstance(found, Response):
        return found
    return _form_page(request, found[0], False, found[1])


async def _submit(request: Request, name: str | None) -> Response:
    """Preview (``do=preview``) or save the posted form; ``name``: the schedule being edited."""
    creating = name is None
    checked = await checked_form(request, "create" if creating else "edit")
    if isinstance(checked, Response):
        return checked
    caller, posted = checked
    form = ScheduleForm.posted(posted, name)
    saving = posted.get("do") != "preview"
    address = address_of(request)

    def work(admin: Admin) -> tuple[Any, list[str]] | Response:
        if creating:
            if not may_act_on(caller.token, namespace_in({})):  # MERGE §1: the form's namespace field
                return problem(request, 403, f"{caller.described} may not create schedules in this namespace")
        else:
            info = admin.get(form.name)
            try:
                scoped(caller, "edit", address, admin, form.name)
            except Forbidden as exc:
                return problem(request, 403, str(exc))
            if info.module is not None:
                return problem(request, 409, DECLARED.format(name=form.name, module=info.module))
        if saving:
            return save(admin, form, caller.who, address, creating=creating), kinds(admin)
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
    checked = await checked_form(request, None)
    if isinstance(checked, Response):
        return checked
    caller, posted = checked
    action = str(posted.get("action", ""))
    if action not in ACTIONS:
        return problem(request, 400, f"action: {action!r} is not one of {', '.join(ACTIONS)}")
    if not caller.may(action):
        return problem(
            request, 403, f"{caller.described} may not {action}: that needs the {role_needed(action).value} role"
        )
    names = [str(n) for n in posted.getlist("name") if str(n)]
    if not names:
        return problem(request, 400, "no schedules selected: tick the schedules to act on first")
    if len(names) > MAX_SELECTION:
        return problem(request, 400, f"at most {MAX_SELECTION} schedules at once, got {len(names)}")
    address = address_of(request)

    def work(admin: Admin) -> Outcome:
        if caller.token is not None and caller.token.namespaces:
            # Read only for a token limited to namespaces: the selection is all or none.
            for name in dict.fromkeys(names):
                scoped(caller, action, address, admin, name)
        return perform_many(admin, action, names, caller.who, address)

    try:
        outcome = await _dashboard(request).read(work, request)
    except Forbidden as exc:
        return problem(request, 403, str(exc))
    except ScheduleNotFoundError as exc:
        return problem(request, 409, f"Nothing was changed: {exc}")
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

"""The viewer's ASGI app: the static front end and a JSON API over one dataset's index.

Nothing outside the package's static folder and the dataset is ever read; every request but
the page and its static files must carry a session of this launch (`viewer.serving.access`: a link's
one-time code exchanged for a header the page sends), and the API answers no request another
site's page makes.
"""

from __future__ import annotations

import contextlib
import csv
import io
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import cache
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kinetoscope.analysis.settings.user_options import given
from kinetoscope.viewer.allocations import allocator_state, memory
from kinetoscope.viewer.indexing import clock_cache, ids
from kinetoscope.viewer.indexing.index import ViewerIndex, is_damage
from kinetoscope.viewer.pages import info, summaries
from kinetoscope.viewer.querying import area, neighbours, queries, search
from kinetoscope.viewer.querying.collective_links import CollectiveLinks
from kinetoscope.viewer.querying.sql import SqlRejectedError, SqlRunner
from kinetoscope.viewer.querying.window import WindowRequest, query_window
from kinetoscope.viewer.serving.access import CODE_TTL_S, SESSION_HEADER, Access
from kinetoscope.viewer.serving.pairing import NEW_PREFIX, ComparePair

STATIC_DIR = Path(__file__).parents[1] / "static"
SESSION_PATH = "/api/session"
MAX_SESSION_BODY_BYTES = 4096
PARAM_LIMIT = 2**62  # a span of years (traces of different years in one run); keeps int64 arithmetic from overflowing
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")


class BadRequestError(ValueError):
    """A query parameter is missing or malformed."""


# What /api/progress says once the dataset is served (viewer/loading.py says the rest).
READY = {"stage": "ready", "done": 0, "total": 0, "message": "", "error": None, "ready": True, "elapsed_s": 0.0}


def json_response(data: Any, status: int = 200) -> Response:
    body = orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    return Response(body, status_code=status, media_type="application/json",
                    headers={"Cache-Control": "no-store"})


def _int(request: Request, name: str, default: int | None = None) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        if default is None:
            raise BadRequestError(f"missing query parameter {name!r}")
        return default
    return _bounded(name, raw)


def _ints(request: Request, name: str) -> list[int]:
    raw = request.query_params.get(name, "")
    return [_bounded(name, x) for x in raw.split(",") if x.strip()]


def _bounded(name: str, raw: str) -> int:
    """`raw` as an integer (a decimal or float literal, rounded down) within +-PARAM_LIMIT."""
    try:
        value = int(raw) if raw.strip().lstrip("+-").isdigit() else int(float(raw))
    except (ValueError, OverflowError) as exc:  # 'abc', 'nan', '1e400'
        raise BadRequestError(f"query parameter {name!r} must be a finite number, got {raw[:40]!r}") from exc
    if abs(value) > PARAM_LIMIT:
        raise BadRequestError(f"query parameter {name!r} must be within +-2**62, got {raw[:40]!r}")
    return value


class Api:
    """The endpoints; each reads its parameters, calls one query and returns JSON."""

    def __init__(self, index: ViewerIndex, extra_meta: dict[str, Any] | None = None) -> None:
        self.index = index
        self.extra_meta = extra_meta or {}
        self.sql = SqlRunner(index.dataset)
        user = given()  # the command's settings for the analyses (the request threads start without them)
        self.summary = cache(lambda: summaries.summary(index, user=user))
        self.findings = cache(lambda: summaries.findings(index, user))
        self.clock_offsets = cache(lambda: clock_cache.clocks(index))
        self.collectives = CollectiveLinks(index)  # built on the first /api/collective
        self.allocation_sources = cache(lambda: memory.allocation_sources(index))  # reads every [memory] event

    def routes(self) -> list[Route]:
        get = {
            "/api/meta": lambda r: {**queries.meta(self.index), **self.clock_offsets(), **self.extra_meta},
            "/api/window": self.window,
            "/api/counters": lambda r: queries.counter_window(
                self.index, _int(r, "start"), _int(r, "end"), _int(r, "px", 1000), _ints(r, "ids"),
                shifts_ns=_ints(r, "shifts")),
            "/api/event/{event_id:int}": self.event,
            "/api/collective/{event_id:int}": lambda r: ids.collective(self.collectives.instance(
                r.path_params["event_id"])),
            "/api/flows/{event_id:int}": lambda r: ids.chain(queries.dependency_chain(
                self.index, r.path_params["event_id"])),
            "/api/search": lambda r: ids.search_result(search.search(
                self.index, r.query_params.get("q", ""), _int(r, "offset", 0),
                min(max(_int(r, "limit", search.PAGE_SIZE), 1), 1000))),
            "/api/matches": lambda r: ids.matches(search.matches(
                self.index, r.query_params.get("q", ""), _int(r, "start"), _int(r, "end"), _ints(r, "tracks"))),
            "/api/range": lambda r: queries.range_summary(self.index, _int(r, "start"), _int(r, "end"),
                                                          _ints(r, "tracks")),
            "/api/area": lambda r: area.area_summary(self.index, _int(r, "start"), _int(r, "end"), _ints(r, "tracks"),
                                                     r.query_params.get("view", "all")),
            "/api/area/pivot": lambda r: area.pivot(
                self.index, _int(r, "start"), _int(r, "end"), _ints(r, "tracks"),
                view=r.query_params.get("view", "all"), by=r.query_params.get("by", "name"),
                arg=r.query_params.get("arg", "")[:200]),
            "/api/neighbour/{event_id:int}": lambda r: ids.brief(neighbours.neighbour(
                self.index, r.path_params["event_id"], r.query_params.get("dir", "next") != "prev")),
            "/api/op_at": lambda r: ids.brief(queries.op_at(
                self.index, r.query_params.get("run", ""), _int(r, "rank"), _int(r, "ts"))),
            "/api/stack": lambda r: queries.stack(self.index, r.query_params.get("run", ""), _int(r, "rank"),
                                                  _int(r, "stack_id")),
            "/api/memory/sources": lambda r: self.allocation_sources(),
            "/api/memory/allocations": lambda r: ids.allocations(memory.allocations(
                self.index, r.query_params.get("run", ""), _int(r, "rank"), _int(r, "device"))),
            "/api/memory/series": lambda r: memory.memory_series(self.index),
            "/api/memory/segment_sources": lambda r: allocator_state.segment_sources(self.index),
            "/api/memory/segments": lambda r: allocator_state.allocator_state(
                self.index, r.query_params.get("run", ""), _int(r, "rank"), _int(r, "device"),
                at_ns=_int(r, "at_ns") if "at_ns" in r.query_params else None,
                snapshot=r.query_params.get("snapshot", ""), session=r.query_params.get("session", "")),
            "/api/memory/largest": lambda r: ids.allocations(memory.largest(
                self.index, r.query_params.get("run", ""), _int(r, "rank"), _int(r, "device"),
                min_bytes=_int(r, "min_bytes", 0), stack_text=r.query_params.get("stack", "")[:200],
                limit=min(max(_int(r, "limit", memory.MAX_LISTED), 1), 1000))),
            "/api/summary": lambda r: ids.summary(self.summary()),
            "/api/findings": lambda r: ids.findings(self.findings()),
            "/api/progress": lambda r: READY,  # a served dataset is ready (view answers it while preparing)
            "/api/info": lambda r: info.info(self.index),
        }
        routes = [Route(path, self._wrap(fn)) for path, fn in get.items()]
        routes.append(Route("/api/sql", self._wrap(self.run_sql), methods=["POST"]))
        routes.append(Route("/api/sql/start", self._wrap(self.start_sql), methods=["POST"]))
        routes.append(Route("/api/sql.csv", self.sql_csv, methods=["GET"]))
        return routes

    def _wrap(self, fn: Callable[[Request], Any]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            request.state.body = await request.body() if request.method == "POST" else b""
            try:
                return json_response(await run_in_threadpool(self._answer, fn, request))
            except (BadRequestError, SqlRejectedError, search.SearchSyntaxError, area.AreaError) as exc:
                return json_response({"error": str(exc)}, status=400)

        return endpoint

    def _answer(self, fn: Callable[[Request], Any], request: Request) -> Any:
        """`fn`'s answer; when the index file turns out damaged, it is rebuilt and `fn` asked again."""
        generation = self.index.generation
        try:
            return fn(request)
        except Exception as exc:
            if not is_damage(exc):
                raise
            print(f"kinetoscope view: the viewer index is damaged ({str(exc)[:120]}): rebuilding it",
                  file=sys.stderr, flush=True)
        self.index.repair(generation)
        return fn(request)

    def window(self, request: Request) -> Any:
        width_px = min(max(_int(request, "px", 1000), 1), 8000)
        req = WindowRequest(start_ns=_int(request, "start"), end_ns=_int(request, "end"), width_px=width_px,
                            tracks=tuple(_ints(request, "tracks")), ops_tracks=tuple(_ints(request, "ops")),
                            shifts_ns=tuple(_ints(request, "shifts")))
        return ids.window(query_window(self.index, req))

    def event(self, request: Request) -> Any:
        found = ids.details(queries.event_details(self.index, request.path_params["event_id"]))
        if found is None:
            raise BadRequestError(f"no event with id {request.path_params['event_id']}")
        return found

    def run_sql(self, request: Request) -> Any:
        try:
            sql = str(orjson.loads(request.state.body or b"{}").get("q", ""))
        except (orjson.JSONDecodeError, AttributeError) as exc:
            raise BadRequestError("the body must be JSON: {\"q\": \"SELECT ...\"}") from exc
        result = self.sql.run(sql)
        return {"columns": result.columns, "types": result.types, "rows": result.rows,
                "truncated": result.truncated, "elapsed_ms": result.elapsed_ms}

    def start_sql(self, request: Request) -> Any:
        """Starts the SQL worker ahead of the first query (the page asks when its Query tab opens);
        ``started`` is false when none could start (the viewer is stopping, or it died at once)."""
        return {"started": self.sql.start()}

    async def sql_csv(self, request: Request) -> Response:
        try:
            result = await run_in_threadpool(self.sql.run, request.query_params.get("q", ""))
        except SqlRejectedError as exc:
            return PlainTextResponse(str(exc), status_code=400)
        return Response(_csv(result.columns, result.rows), media_type="text/csv",
                        headers={"Content-Disposition": 'attachment; filename="query.csv"'})


def _csv(columns: list[str], rows: list[list[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(columns)
    writer.writerows(rows)
    return out.getvalue()


class Guard(BaseHTTPMiddleware):
    """Host check (no DNS rebinding), no cross-site API requests, this launch's session, and
    headers that keep the page self-contained.

    With `access`, the page (``/``) and its static files are served to anyone (they are the
    package's own files); ``POST /api/session`` exchanges a link's one-time code for a session;
    every other request needs that session in the ``X-Kinetoscope-Session`` header. No cookie is
    set. A URL of the older ``?token=`` form is refused.
    """

    def __init__(self, app: Any, *, access: Access | None, allowed_hosts: frozenset[str] | None) -> None:
        super().__init__(app)
        self.access = access
        self.allowed_hosts = allowed_hosts

    async def dispatch(self, request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        host = request.headers.get("host", "")
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            return PlainTextResponse(f"unexpected Host header {host!r}", status_code=403)
        if _cross_site(request, host):
            return PlainTextResponse("cross-site request refused: open the viewer's own URL", status_code=403)
        refused = await self._signed_in(request) if self.access is not None else None
        if refused is not None:
            return refused
        response = await call_next(request)
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        return response

    async def _signed_in(self, request: Request) -> Response | None:
        """None when `request` may go on, else the answer (a session, or a refusal)."""
        assert self.access is not None
        if "token" in request.query_params:
            return _refused("links with ?token= are from an older kinetoscope and no longer accepted: open the "
                            "link `kinetoscope view` printed (its one-time code works once)")
        path = request.url.path
        if path == SESSION_PATH:
            return await self._exchange(request)
        if path == "/" or path.startswith("/static/"):
            return None
        if self.access.allows(request.headers.get(SESSION_HEADER)):
            return None
        return _refused("no session of this viewer: open a link that `kinetoscope view` printed (each link works once, "
                        "in one browser)")

    async def _exchange(self, request: Request) -> Response:
        assert self.access is not None
        if request.method != "POST":
            return PlainTextResponse("POST a one-time code as {\"code\": \"...\"}", status_code=405)
        body = (await request.body())[:MAX_SESSION_BODY_BYTES]
        try:
            code = orjson.loads(body).get("code", "") if body else ""
        except (orjson.JSONDecodeError, AttributeError):
            code = ""
        session = self.access.redeem(code) if isinstance(code, str) else None
        if session is not None:
            return json_response({"session": session})
        self.access.reprint()
        return _refused(f"no valid one-time code (a link works once, for {CODE_TTL_S / 60:.0f} minutes): open the new "
                        "link printed in the terminal where `kinetoscope view` runs")


def _refused(message: str) -> Response:
    return json_response({"error": message, "login": True}, status=401)


def _cross_site(request: Request, host: str) -> bool:
    """Whether a browser sent this request on behalf of another site (or another port of this one).

    Any foreign ``Origin`` is refused; the API also needs ``Sec-Fetch-Site`` to say the page
    itself asked (or the user typed the URL). Clients that send neither (curl) still need a session.
    """
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{host}":
        return True
    site = request.headers.get("sec-fetch-site", "same-origin")
    api = request.url.path.startswith(("/api/", f"{NEW_PREFIX}/api/"))
    return api and site not in ("same-origin", "none")


def create_app(index: ViewerIndex, *, access: Access | None = None,
               allowed_hosts: frozenset[str] | None = None, pair: ComparePair | None = None) -> Starlette:
    """The app for one dataset, or for BASE and NEW of `pair` (compare mode: `index` is BASE, NEW's
    API is under /new, /api/compare the comparison). `allowed_hosts`: accepted Host headers (None
    accepts any); `access`: the launch's codes and sessions (None: no sign-in, for tests)."""
    side = {"compare": {"base": pair.base_label, "new": pair.new_label, "side": "base"}} if pair else None
    api = Api(index, side)
    apis = [api]

    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    routes = [Route("/", page), *api.routes(), Mount("/static", StaticFiles(directory=STATIC_DIR), name="static")]
    if pair is not None:
        new_api = Api(pair.new, {"compare": {"base": pair.base_label, "new": pair.new_label, "side": "new"}})
        apis.append(new_api)
        routes += [Route("/api/compare", api._wrap(lambda r: pair.report())),
                   Route("/api/compare/events", api._wrap(lambda r: ids.compare_events(pair.events(
                       r.query_params.get("base", ""), r.query_params.get("new", ""), _int(r, "step"))))),
                   Mount(NEW_PREFIX, routes=new_api.routes())]
    middleware = [Middleware(Guard, access=access, allowed_hosts=allowed_hosts)]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        for each in apis:
            each.sql.close()  # the SQL worker processes go with the server

    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)

"""The page's routes: the job list, a job, a replica's pod (TF_CONFIG and logs), their live streams, and the
login. Every route but the login and the static assets needs a token the apiserver accepts (401 otherwise) and
answers 403 for anything the user may not read, or when the apiserver cannot be asked."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import anyio.to_thread
import structlog
import yaml
from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tfop.api.constants import KIND
from tfop.api.runtime_id import runtime_id
from tfop.api.tensorboard import tensorboard_path
from tfop.api.timestamps import format_time
from tfop.kube.access_review import ReviewError
from tfop.kube.client import KubeClient
from tfop.kube.errors import ApiError
from tfop.kube.resource import PODS
from tfop.kube.resource_access import ResourceAccess
from tfop.objects import Object
from tfop.ui import tensorboard_proxy as tb
from tfop.ui.cache import UiCache, pod_event_of_job
from tfop.ui.live import DELETED, DENIED, live_updates
from tfop.ui.live_patch import Piece
from tfop.ui.log_follow import MAX_LINE, follow_log, tail_lines
from tfop.ui.login import Login
from tfop.ui.page_error import PageError
from tfop.ui.pieces import COLUMNS, job_pieces, list_pieces
from tfop.ui.row_cache import RowCache
from tfop.ui.security import COOKIE_SECONDS, SecurityHeaders, same_origin
from tfop.ui.viewer import TOKEN_COOKIE, Viewer, request_token
from tfop.ui.views.clock_text import time_html
from tfop.ui.views.happenings import happenings
from tfop.ui.views.job_list import PAGE_SIZES, STATES, JobRow, job_state, page_of, select_rows
from tfop.ui.views.job_page import (
    condition_rows,
    event_rows,
    main_container_status,
    recreated_exits,
    replica_rows,
    tf_config_text,
)
from tfop.ui.views.links import job_links
from tfop.ui.views.list_query import ListQuery, empty_list_text
from tfop.ui.views.summary import CHART_HEIGHT, CHART_WIDTH, summary
from tfop.ui.views.timeline import layout, stepped_now

log = structlog.get_logger("tfop.ui")
HERE = Path(__file__).parent
LOG_TIMEOUT = (3.0, 10.0)
# A followed log may be quiet for long; a connection silent longer than this is taken for dead (the page says so).
FOLLOW_TIMEOUT = (3.0, 600.0)

def job_url(namespace: str, name: str) -> str:
    return f"/namespaces/{quote(namespace, safe='')}/tfjobs/{quote(name, safe='')}"


class UiApp:
    def __init__(self, cache: UiCache, access: ResourceAccess, client: KubeClient,
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.cache = cache
        self.access = access
        self.client = client
        self.now = now
        self.templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True)
        self.templates.globals.update(job_url=job_url, time_html=lambda moment: time_html(moment, None),
                                      chart_width=CHART_WIDTH, chart_height=CHART_HEIGHT)
        self._row_macros: Any = self.templates.get_template("_job_row.html").module
        self._list_macros: Any = self.templates.get_template("_job_table_pieces.html").module
        self._job_macros: Any = self.templates.get_template("_job_live_pieces.html").module
        self.rows = RowCache(self._render_row)
        cache.jobs.add_event_handler(on_delete=self.rows.forget)
        self.login = Login(self.render, lambda token: self._ask(lambda: self.access.authenticate(token)))

    def starlette(self) -> Starlette:
        routes = [
            Route("/", self.jobs_page),
            Route("/live/jobs", self.jobs_live),
            Route("/namespaces/{namespace}/tfjobs/{name}", self.job_page),
            Route("/live/namespaces/{namespace}/tfjobs/{name}", self.job_live),
            Route("/namespaces/{namespace}/tfjobs/{name}/pods/{pod}", self.pod_page),
            Route("/live/namespaces/{namespace}/tfjobs/{name}/pods/{pod}/log", self.log_live),
            Route("/namespaces/{namespace}/tfjobs/{name}/tensorboard",
                  lambda request: RedirectResponse(f"{request.url.path}/", status_code=308)),
            Route("/namespaces/{namespace}/tfjobs/{name}/tensorboard/{rest:path}", self.tensorboard,
                  methods=["GET", "HEAD", "POST"]),
            Route("/login", self.login.form, methods=["GET"]),
            Route("/login", self.login.log_in, methods=["POST"]),
            Route("/logout", self.login.log_out, methods=["POST"]),
            Route("/healthz", lambda _request: PlainTextResponse("ok\n")),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
        return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)],
                         exception_handlers={PageError: self._denied, HTTPException: self._http_error})

    # -- who is asking -----------------------------------------------------------------------------------------

    def viewer(self, request: Request) -> Viewer:
        token = request_token(request.headers, request.cookies)
        if token is None:
            raise PageError(401, "")
        user = self._ask(lambda: self.access.authenticate(token))
        if user is None:
            raise PageError(401, "The apiserver does not accept this token (expired or made up?).")
        viewer = Viewer(user, self.access)
        request.state.viewer = viewer  # a refusal's page names the user too
        return viewer

    def _ask(self, question: Callable[[], Any]) -> Any:
        try:
            return question()
        except ReviewError as error:
            log.warning("cannot review a request", error=str(error))
            raise PageError(403, "The apiserver could not be asked whether you may see this.") from None

    def _require(self, allowed: bool, what: str) -> None:
        if not allowed:
            raise PageError(403, f"You may not {what}.")

    # -- pages -------------------------------------------------------------------------------------------------

    def render(self, template: str, http_status: int = 200, **context: Any) -> HTMLResponse:
        # The server's clock, against which the browser writes relative times (live.js): the two may disagree.
        context.setdefault("server_now", format_time(self.now()))
        context.setdefault("login_hours", COOKIE_SECONDS // 3600)  # the login page's words match the cookie
        return HTMLResponse(self.templates.get_template(template).render(**context), status_code=http_status)

    def _job_list_context(self, viewer: Viewer, query: ListQuery, now: datetime | None) -> dict[str, Any]:
        """The rows of the page asked for; `now` writes their relative times (None: the browser writes them)."""
        jobs = self.cache.all_jobs()
        visible = self._ask(lambda: viewer.job_namespaces(job["metadata"]["namespace"] for job in jobs))
        if query.namespace:
            self._require(self._ask(lambda: viewer.may("list", "tfjobs", query.namespace, group="kubeflow.org")),
                          f"list TFJobs in namespace {query.namespace}")
        elif visible is not None and not visible:
            # None of the namespaces with jobs: a user who may list in another one is shown an empty list.
            others = [name for name in self.cache.namespace_names() if name not in {j["metadata"]["namespace"]
                                                                                    for j in jobs}]
            self._require(self._ask(lambda: viewer.may_list_jobs_in_any(others)), "list TFJobs in any namespace")
        seen = [job for job in jobs if visible is None or job["metadata"]["namespace"] in visible]
        rendered = [self.rows.row(job) for job in seen]
        selected = select_rows(rendered, lambda item: item.row, now or self.now(), namespace=query.namespace,
                               state=query.state, words=query.words, sort=query.sort, descending=query.descending)
        page = page_of(len(selected), query.page, query.per)
        shown = selected[page.first:page.last]
        return {"rows": [item.html(now) for item in shown], "query": query, "page": page,
                "keys": [f"job:{item.row.namespace}/{item.row.name}" for item in shown],
                "columns": COLUMNS, "empty": empty_list_text(query, visible, bool(seen)),
                "namespaces": sorted({job["metadata"]["namespace"] for job in seen})}

    def _render_row(self, row: JobRow) -> tuple[Markup, Markup]:
        return Markup(self._row_macros.head(row)), Markup(self._row_macros.tail(row))

    def jobs_page(self, request: Request) -> Response:
        viewer = self.viewer(request)
        query = ListQuery.parse(request.query_params)
        context = self._job_list_context(viewer, query, self.now())
        return self.render("jobs.html", user=viewer.user.name, states=STATES, page_sizes=PAGE_SIZES,
                           live_url=query.url("/live/jobs"), **context)

    async def jobs_live(self, request: Request) -> Response:
        viewer = await self._viewer_async(request)
        query = ListQuery.parse(request.query_params)

        def pieces() -> list[Piece]:
            return list_pieces(self._list_macros, self._job_list_context(viewer, query, None), query)

        return await self._stream(pieces)

    def _job_context(self, viewer: Viewer, namespace: str, name: str) -> tuple[Object, dict[str, Any]]:
        self._require(self._ask(lambda: viewer.may_get_job(namespace, name)), f"get TFJob {namespace}/{name}")
        job = self.cache.job(namespace, name)
        if job is None:
            raise PageError(404, f"There is no TFJob {namespace}/{name}.")
        conditions = (job.get("status") or {}).get("conditions") or []
        context: dict[str, Any] = {"namespace": namespace, "name": name, "conditions": condition_rows(job),
                                   "state": job_state(job)[0], "links": job_links(job),
                                   "tensorboard_url": (f"{tensorboard_path(namespace, name)}/"
                                                       if tb.service_name(job) is not None else None),
                                   "replicas": None, "timeline": None, "events": None, "happenings": None,
                                   "summary": summary(job, [], [], recreated_exits(job)),
                                   "pod_url": lambda pod: f"{job_url(namespace, name)}/pods/{quote(pod, safe='')}"}
        pods: list[Object] = []
        job_events: list[Object] = []
        may_list_events = self._ask(lambda: viewer.may_list_events(namespace))
        if may_list_events:
            job_events = self.cache.events_of(namespace, KIND, name)
        if self._ask(lambda: viewer.may_list_pods(namespace)):
            pods = self.cache.job_pods(namespace, name)
            current = {pod["metadata"].get("uid") for pod in pods}
            earlier = [pod for pod in self.cache.earlier_pods(namespace, name)
                       if pod["metadata"].get("uid") not in current]
            recreated = recreated_exits(job)  # the exits of pods tfop recreated, which may be gone
            context["replicas"] = replica_rows(pods, recreated, earlier)
            context["summary"] = summary(job, pods, earlier, recreated, self.cache.metric_history(namespace, name))
            # Without the right to list events, what the pods and the status say is still told.
            context["happenings"] = happenings([*earlier, *pods], job_events, job)
            context["timeline"] = layout([*earlier, *pods], conditions, stepped_now(self.now()),
                                         context["happenings"], recreated)
        if may_list_events:
            # Its pods' events by their names, so that a deleted pod's stay while the apiserver keeps them.
            rid = runtime_id(str(job["metadata"].get("uid", "")))
            context["events"] = event_rows([*job_events, *(event for event in self.cache.pod_events_of_job(
                namespace, name) if pod_event_of_job(event, rid))])
        return job, context

    def job_page(self, request: Request) -> Response:
        viewer = self.viewer(request)
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        job, context = self._job_context(viewer, namespace, name)
        live_url = "/live" + job_url(namespace, name)
        return self.render("job.html", user=viewer.user.name, live_url=live_url,
                           yaml_text=yaml.safe_dump(job, sort_keys=False), **context)

    async def job_live(self, request: Request) -> Response:
        viewer = await self._viewer_async(request)
        namespace, name = request.path_params["namespace"], request.path_params["name"]

        def pieces() -> list[Piece]:
            return job_pieces(self._job_macros, self._job_context(viewer, namespace, name)[1], namespace)

        return await self._stream(pieces)

    def pod_page(self, request: Request) -> Response:
        viewer = self.viewer(request)
        namespace, name, pod_name = (request.path_params[key] for key in ("namespace", "name", "pod"))
        self._require(self._ask(lambda: viewer.may_get_job(namespace, name)), f"get TFJob {namespace}/{name}")
        pods = {pod["metadata"]["name"]: pod for pod in self.cache.job_pods(namespace, name)}
        if pod_name not in pods:
            raise PageError(404, f"TFJob {namespace}/{name} has no pod {pod_name} now.")
        pod = pods[pod_name]
        tf_config = None
        if self._ask(lambda: viewer.may_get_pod(namespace, pod_name)):
            # One GET, not the cache: the cache keeps no pod spec (TF_CONFIG grows with replicas squared).
            try:
                tf_config = tf_config_text(self.client.get(PODS, pod_name, namespace))
            except ApiError as error:
                tf_config = f"(the apiserver gave no pod: {error})"
        previous = request.query_params.get("previous") == "1"
        follow = request.query_params.get("follow") == "1" and not previous
        tail = tail_lines(request.query_params.get("tail"))
        container = str(main_container_status(pod).get("name") or "tensorflow")
        log_text, log_problem = "", ""
        follow_url = ""
        if not self._ask(lambda: viewer.may_read_log(namespace, pod_name)):
            log_problem = f"You may not read the logs of pods in {namespace}."
        elif follow:
            follow_url = (f"/live{job_url(namespace, name)}/pods/{quote(pod_name, safe='')}/log?"
                          + urlencode({"tail": tail}))
        else:
            query = [("container", container), ("tailLines", str(tail))] + ([("previous", "true")] if previous else [])
            try:
                log_text = self.client.request_text(PODS.path(namespace, pod_name, "log"), query=query,
                                                    timeout=LOG_TIMEOUT, max_retries=0)
            except ApiError as error:
                log_problem = f"The apiserver gave no log: {error}"
        return self.render("pod.html", user=viewer.user.name, namespace=namespace, job=name,
                           job_link=job_url(namespace, name), pod=pod_name, tf_config=tf_config, container=container,
                           previous=previous, tail=tail, log_text=log_text, log_problem=log_problem,
                           follow_url=follow_url)

    async def log_live(self, request: Request) -> Response:
        """A replica's log followed as it grows (log_follow.py), from the last `tail` lines on."""
        viewer = await self._viewer_async(request)
        namespace, name, pod_name = (request.path_params[key] for key in ("namespace", "name", "pod"))

        def allowed() -> bool:
            try:
                return bool(viewer.may_get_job(namespace, name) and viewer.may_read_log(namespace, pod_name))
            except ReviewError:
                return False

        def pod_of_job() -> Object:
            self._require(self._ask(lambda: viewer.may_get_job(namespace, name)), f"get TFJob {namespace}/{name}")
            self._require(self._ask(lambda: viewer.may_read_log(namespace, pod_name)),
                          f"read the logs of pods in {namespace}")
            pods = {pod["metadata"]["name"]: pod for pod in self.cache.job_pods(namespace, name)}
            if pod_name not in pods:
                raise PageError(404, f"TFJob {namespace}/{name} has no pod {pod_name} now.")
            return pods[pod_name]

        pod = await anyio_run(pod_of_job)
        container = str(main_container_status(pod).get("name") or "tensorflow")
        query = [("container", container), ("follow", "true"),
                 ("tailLines", str(tail_lines(request.query_params.get("tail"))))]
        path = PODS.path(namespace, pod_name, "log")
        return StreamingResponse(
            follow_log(lambda: self.client.stream_lines(path, query=query, timeout=FOLLOW_TIMEOUT, max_line=MAX_LINE),
                       allowed),
            media_type="text/event-stream")

    async def tensorboard(self, request: Request) -> Response:
        """The job's TensorBoard (tensorboard_proxy.py), to whoever may get the job."""
        namespace, name = request.path_params["namespace"], request.path_params["name"]
        origin = f"{request.url.scheme}://{request.headers.get('host')}"
        if request.method == "POST" and not same_origin(request.headers.get("origin"), request.url.scheme,
                                                        request.headers.get("host")):
            raise PageError(403, "TensorBoard takes a POST only from its own pages.")
        if "service-worker" in request.headers:
            raise PageError(403, "TensorBoard's pages may not install a service worker.")
        length = request.headers.get("content-length", "0")
        if not length.isdigit() or int(length) > tb.MAX_BODY:
            raise PageError(400, "That request is too large for TensorBoard.")
        body = await request.body() if request.method == "POST" else None

        def ask() -> Response:
            viewer = self.viewer(request)
            self._require(self._ask(lambda: viewer.may_get_job(namespace, name)), f"get TFJob {namespace}/{name}")
            job = self.cache.job(namespace, name)
            service = tb.service_name(job) if job is not None else None
            if service is None:
                raise PageError(404, f"TFJob {namespace}/{name} has no TensorBoard: it asks for none "
                                     f"(tfop.kubeflow.org/tensorboard).")
            try:
                return tb.answer(self.client, tb.Asked(namespace, name, service, request.method,
                                                       request.path_params["rest"], request.url.query, body,
                                                       tb.forwarded(request.headers), origin))
            except tb.UnreachableError as error:
                raise PageError(502, str(error)) from None

        result: Response = await anyio_run(ask)
        return result

    # -- plumbing ----------------------------------------------------------------------------------------------

    async def _viewer_async(self, request: Request) -> Viewer:
        result: Viewer = await anyio_run(lambda: self.viewer(request))
        return result

    async def _stream(self, pieces: Callable[[], list[Piece]]) -> Response:
        """A live stream of `pieces`, which raise PageError when the user may not see them: the first render
        answers the request (a 403 or 404 as the page would), a later one ends the stream saying which."""
        generation = self.cache.changes.generation
        first = await anyio_run(pieces)

        def later() -> list[Piece] | str:
            try:
                return pieces()
            except PageError as error:
                return DELETED if error.status == 404 else DENIED

        return StreamingResponse(live_updates(self.cache.changes, later, first, generation,
                                              lambda: format_time(self.now())),
                                 media_type="text/event-stream")

    async def _denied(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, PageError)
        if exc.status == 401:
            response = self.render("login.html", 401, message=exc.message)
            response.headers["WWW-Authenticate"] = 'Bearer realm="tfop ui"'
            if TOKEN_COOKIE in request.cookies:
                response.delete_cookie(TOKEN_COOKIE, path="/", httponly=True, samesite="strict")
            return response
        titles = {400: "Bad Request", 403: "Forbidden", 404: "Not Found"}
        viewer = getattr(request.state, "viewer", None)
        return self.render("error.html", exc.status, status=exc.status, title=titles.get(exc.status, ""),
                           message=exc.message, user=viewer.user.name if isinstance(viewer, Viewer) else "")

    async def _http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        return self.render("error.html", exc.status_code, status=exc.status_code, title="", message=exc.detail)


async def anyio_run(call: Callable[[], Any]) -> Any:
    """A blocking call (the apiserver's reviews) off the event loop."""
    return await anyio.to_thread.run_sync(call)

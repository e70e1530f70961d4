"""What operators watch: a request id on every request and log line,
structured JSON logs, Prometheus metrics (``/metrics``) and readiness
(``/readyz``: the database answers and a worker is connected to it).

Request metrics are counted in process; queue depth, per-view lag, job
failures and views by status are read from the database at scrape time, so
they cover every worker process, not only this one's threads."""

from __future__ import annotations

import contextvars
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator

import sqlalchemy as sa
from fastapi import FastAPI, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from storage import channels, db, ops

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="")
log = logging.getLogger("podviews.http")


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, the request id
    (when serving a request), any ``extra`` fields, and the exception."""

    RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message"}

    def format(self, record: logging.LogRecord) -> str:
        out = {"time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"), "level": record.levelname,
               "logger": record.name, "message": record.getMessage()}
        if request_id.get():
            out["request_id"] = request_id.get()
        out.update({k: v for k, v in vars(record).items()
                    if k not in self.RESERVED and k not in out and not k.startswith("_")})
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str)


def configure_logging(level: str = "INFO") -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # our request log replaces it


class Metrics:
    def __init__(self, engine: sa.Engine) -> None:
        self.registry = CollectorRegistry()
        self.latency = Histogram("podviews_request_seconds", "HTTP request latency",
                                 ["method", "route", "status"], registry=self.registry)
        self.batch = Histogram("podviews_write_triples", "triples changed by one pod write",
                               buckets=(0, 1, 2, 5, 10, 50, 100, 1000, 10_000, 100_000),
                               registry=self.registry)
        self.deliveries = Counter("podviews_webhook_posts", "webhook notifications POSTed by "
                                  "this process, by outcome (delivered, failed), and channels "
                                  "that died here (dead)", ["outcome"], registry=self.registry)
        self.followers = Gauge("podviews_sse_followers", "event streams and WebSocket "
                               "channels caught up with their view, written by the view's "
                               "writer (design note 134)",
                               registry=self.registry)
        self.fanout = Histogram("podviews_fanout_seconds", "time a view's writer took to write "
                                "one delivery to the followers it wrote, on the event loop (the "
                                "server's share of a fan-out, design note 139)",
                                buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                         0.25, 1.0), registry=self.registry)
        self.fanout_writes = Counter("podviews_fanout_writes", "deliveries written by the "
                                     "views' writers to their followers", registry=self.registry)
        self.registry.register(_Pipeline(engine))

    def webhooks(self, outcome: str) -> None:
        self.deliveries.labels(outcome).inc()

    def fanned(self, written: int, seconds: float) -> None:
        self.fanout.observe(seconds)
        self.fanout_writes.inc(written)


class _Pipeline(Collector):
    """Read from the database when scraped."""

    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[Metric]:
        depth = GaugeMetricFamily("podviews_queue_jobs", "jobs not done, by kind and status",
                                  labels=["kind", "status"])
        dead = GaugeMetricFamily("podviews_jobs_dead", "jobs in the dead-letter state",
                                 labels=["kind"])
        failed = GaugeMetricFamily("podviews_job_failures", "failed job attempts so far",
                                   labels=["kind"])
        lag_seq = GaugeMetricFamily("podviews_view_lag_changes",
                                    "changes the view has not applied yet", labels=["view"])
        lag_s = GaugeMetricFamily("podviews_view_lag_seconds",
                                  "age of the view's oldest pending job", labels=["view"])
        status = GaugeMetricFamily("podviews_views", "views by status", labels=["status"])
        notify = GaugeMetricFamily("podviews_notification_channels", "Solid Notifications "
                                   "channels by kind and status (active, dead, ended)",
                                   labels=["kind", "status"])
        done = GaugeMetricFamily("podviews_jobs_done", "jobs done, by kind and the executor "
                                 "that ran them (coalesced: covered by another job of the view)",
                                 labels=["kind", "executor"])
        sizes = HistogramMetricFamily("podviews_job_triples", "a job's work in triples (ΔG for "
                                      "changes, the pods' triples for a backfill), by kind and "
                                      "the executor that ran it", labels=["kind", "executor"])
        with db.reading(self.engine) as c:
            for r in ops.job_sizes(c):
                buckets = [(floatToGoString(b), getattr(r, f"le{b}")) for b in ops.JOB_BUCKETS]
                sizes.add_metric([r.kind, r.executor], buckets + [("+Inf", r.n)],
                                 sum_value=float(r.total))
            for r in ops.jobs_done(c):
                done.add_metric([r.kind, r.executor], r.n)
            for r in ops.queue_depth(c):
                depth.add_metric([r.kind, r.status], r.n)
            for r in ops.job_failures(c):
                dead.add_metric([r.kind], r.dead)
                failed.add_metric([r.kind], float(r.failed))
            for r in channels.counts(c):
                notify.add_metric([r.kind, r.status], r.n)
            counts: dict[str, int] = {}
            for r in ops.view_lag(c):
                lag_seq.add_metric([str(r.id)], float(r.seqs))
                lag_s.add_metric([str(r.id)], float(r.seconds))
                counts[r.status] = counts.get(r.status, 0) + 1
        for s, n in counts.items():
            status.add_metric([s], n)
        yield from (depth, dead, failed, lag_seq, lag_s, status, done, sizes, notify)


class Observe:
    """The request id, latency and log line of every HTTP request, as pure
    ASGI: the response's messages pass straight through (a streamed body is
    neither buffered nor relayed through a task of its own, as Starlette's
    ``BaseHTTPMiddleware`` does: design note 110). A streamed response is
    logged when it ends."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = Headers(scope=scope).get("x-request-id") or uuid.uuid4().hex
        token = request_id.set(rid)
        start = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                MutableHeaders(scope=message)["X-Request-Id"] = rid
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            took = time.perf_counter() - start
            route = getattr(scope.get("route"), "path", "unmatched")
            method, path = scope["method"], scope["path"]
            self.metrics.latency.labels(method, route, str(status)).observe(took)
            log.info("%s %s %s", method, path, status,
                     extra={"status": status, "ms": round(took * 1000, 2), "route": route})
            request_id.reset(token)


def install(app: FastAPI, engine: sa.Engine, workers_alive: Callable[[], bool]) -> Metrics:
    metrics = Metrics(engine)

    app.add_middleware(Observe, metrics=metrics)

    @app.get("/metrics", tags=["ops"], include_in_schema=False)
    def prometheus() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/readyz", tags=["ops"], responses={503: {}})
    def readyz() -> Response:
        try:
            with db.reading(engine) as c:
                workers = ops.workers_connected(c)
        except sa.exc.OperationalError:
            return _status(503, database="unreachable")
        if not (workers or workers_alive()):
            return _status(503, database="ok", workers="none connected")
        return _status(200, database="ok", workers="ok")

    return metrics


def _status(code: int, **fields: str) -> Response:
    return Response(json.dumps({"status": "ready" if code == 200 else "not ready", **fields}),
                    status_code=code, media_type="application/json")

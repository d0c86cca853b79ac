"""``GET /metrics``: what the gateway serves, in Prometheus' text format.

An `Observer` of every request (`streamfn.asgi._observe`): counts by route,
model, deployment and outcome; first-output latency and duration histograms;
tokens by kind; cost; and the streams in flight. Written with the
``prometheus_client`` library (the reference implementation), in a registry of
the App's own, so two servers in one process never mix their numbers.

Under ``streamfn serve --workers N`` each worker is a process: the supervisor
sets ``PROMETHEUS_MULTIPROC_DIR`` before it starts them, each worker writes its
numbers to files there, and whichever worker answers a scrape sums them all
(prometheus_client's multiprocess mode), so a scrape sees the whole server.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

from streamfn.core.serve import HTTPError
from streamfn.core.serve._routes import Headers, authenticate_admin

from ._contract import ServerConfig
from ._messages import Send
from ._observe import Flight, Observer

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from streamfn.core.serve._deployments import DeploymentHealth

__all__ = ["CONTENT_TYPE", "MULTIPROCESS_ENV", "Metrics", "send_metrics"]

CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
#: where workers' numbers meet (prometheus_client's own variable)
MULTIPROCESS_ENV: Final = "PROMETHEUS_MULTIPROC_DIR"
#: distinct models (and outcomes) a metric labels before new ones count as "other": a
#: client names the model, and a refusal's text may quote it
DISTINCT_LABELS: Final = 500
#: seconds: a first token within 10 ms up to a minute; durations up to ten minutes
_FIRST_BUCKETS: Final = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_DURATION_BUCKETS: Final = (0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
_TOKEN_KINDS: Final = ("input", "output", "cache_read", "cache_write", "reasoning")
_FIRST_DOC: Final = "Seconds from a request's arrival to its first output"
_DURATION_DOC: Final = "Seconds from a request's arrival to its end"
_DEPLOYMENT_GAUGES: Final[tuple[tuple[str, str, Literal["max", "livesum"]], ...]] = (
    (
        "streamfn_deployment_resting_seconds",
        "Seconds of rest left for a deployment after a failure (0: healthy)",
        "max",
    ),
    ("streamfn_deployment_in_flight", "Requests a deployment is answering now", "livesum"),
)
_REPEATS_DOC: Final = (
    "Refusals answered from the client key's remembered refusal (within its Retry-After): "
    "counted in streamfn_requests, with no usage record of their own"
)
_COST_DOC: Final = "Cost of the answers served, in US dollars, from the catalogue's prices"


class Metrics:
    """The gateway's Prometheus metrics; an `Observer` of every request."""

    def __init__(self, deployments: Callable[[], Iterable[DeploymentHealth]] | None = None) -> None:
        try:
            import prometheus_client as prom
        except ImportError as exc:  # an extra: say which
            raise ImportError(
                "/metrics needs prometheus_client: pip install 'streamfn[serve]'"
            ) from exc
        self._prom = prom
        multiprocess = bool(os.environ.get(MULTIPROCESS_ENV))
        self.registry: CollectorRegistry = prom.CollectorRegistry(auto_describe=True)
        # in multiprocess mode the values live in files and a collector sums them
        into = None if multiprocess else self.registry
        labels = ("route", "model", "deployment")
        self.requests = prom.Counter(
            "streamfn_requests",
            "Requests served, by how they ended (ok, cut, error:<kind>, refused:<reason>, "
            "disconnected)",
            (*labels, "outcome"),
            registry=into,
        )
        self.first_output, self.duration = (
            prom.Histogram(name, doc, labels, buckets=buckets, registry=into)
            for name, doc, buckets in (
                ("streamfn_first_output_seconds", _FIRST_DOC, _FIRST_BUCKETS),
                ("streamfn_request_duration_seconds", _DURATION_DOC, _DURATION_BUCKETS),
            )
        )
        self.tokens = prom.Counter(
            "streamfn_tokens", "Tokens used, by kind", (*labels, "kind"), registry=into
        )
        self.cost = prom.Counter("streamfn_cost_dollars", _COST_DOC, labels, registry=into)
        self.errors = prom.Counter(
            "streamfn_errors",
            "Requests that did not end whole, by outcome",
            (*labels, "outcome"),
            registry=into,
        )
        self.repeats = prom.Counter(
            "streamfn_refusals_repeated", _REPEATS_DOC, labels, registry=into
        )
        self.in_flight = prom.Gauge(
            "streamfn_streams_in_flight",
            "Requests being served now",
            ("route", "model"),
            registry=into,
            multiprocess_mode="livesum",  # used only in multiprocess mode
        )
        #: the backend's deployments, read as requests end and at each scrape
        self._deployments = deployments
        self.resting, self.deployment_in_flight = (
            prom.Gauge(name, doc, ("deployment", "name"), registry=into, multiprocess_mode=mode)
            for name, doc, mode in _DEPLOYMENT_GAUGES
        )
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        self._seen: dict[str, set[str]] = {"model": set(), "outcome": set()}  # `_bounded`
        if multiprocess:
            from prometheus_client import multiprocess as across

            across.MultiProcessCollector(self.registry)  # type: ignore[no-untyped-call]

    def _bounded(self, label: str, value: str) -> str:
        """``value`` as the ``label``'s value, or "other" once that label has taken
        `DISTINCT_LABELS` values: a client cycling model names cannot grow the
        exposition (or the multiprocess files) without bound."""
        seen = self._seen[label]
        if value in seen:
            return value
        if len(seen) >= DISTINCT_LABELS:
            return "other"
        seen.add(value)
        return value

    def opened(self, flight: Flight) -> None:
        self._child(self.in_flight, flight.route, self._bounded("model", flight.model)).inc()

    def closed(self, flight: Flight) -> None:
        child = self._child
        model = self._bounded("model", flight.model)
        child(self.in_flight, flight.route, model).dec()
        labels = (flight.route, model, flight.deployment or "")
        outcome = self._bounded("outcome", flight.outcome or "disconnected")
        child(self.requests, *labels, outcome).inc()
        if outcome != "ok":
            child(self.errors, *labels, outcome).inc()
            if flight.repeat:
                child(self.repeats, *labels).inc()
        if flight.latency is not None:
            child(self.duration, *labels).observe(flight.latency)
        if flight.time_to_first_output is not None:
            child(self.first_output, *labels).observe(flight.time_to_first_output)
        usage = flight.usage
        if usage is not None:
            for kind in _TOKEN_KINDS:
                count = getattr(usage, kind)
                if count:
                    child(self.tokens, *labels, kind).inc(count)
        if flight.cost is not None and flight.cost.total > 0:
            child(self.cost, *labels).inc(flight.cost.total)
        self.read_deployments()

    def read_deployments(self) -> None:
        """Bring the deployments' gauges up to date (on the serving loop)."""
        if self._deployments is None:
            return
        child = self._child
        for health in self._deployments():
            child(self.resting, health.deployment, health.name).set(health.cooling_for)
            gauge = child(self.deployment_in_flight, health.deployment, health.name)
            gauge.set(health.in_flight)

    def _child(self, metric: Any, *values: str) -> Any:
        """``metric.labels(*values)``, kept: prometheus_client validates the labels and
        takes a lock on every call, a few microseconds each, eight times a request;
        a dict lookup of the same child costs a tenth of that. The children are the
        ones the metric keeps anyway (one per label set), so this holds no more."""
        key = (id(metric), values)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*values)
        return found

    def render(self) -> bytes:
        """The exposition a scrape gets."""
        return bytes(self._prom.generate_latest(self.registry))


async def send_metrics(
    send: Send,
    headers: Headers,
    config: ServerConfig,
    observers: Sequence[Observer],
    open_server: bool,
) -> None:
    """Answer a scrape, from the operator only, with the `Metrics` among ``observers``
    (a 404 when there is none); ``open_server``: clients need no key (`App.open_server`)."""
    authenticate_admin(headers, config.admin_key, open_server=open_server)
    metrics = next((o for o in observers if isinstance(o, Metrics)), None)
    if metrics is None:
        raise HTTPError(404, "not_found", "this server keeps no metrics")
    metrics.read_deployments()
    body = metrics.render()
    headers = [(b"content-type", CONTENT_TYPE.encode()), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})

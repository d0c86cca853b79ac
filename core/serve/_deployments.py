"""Which deployment of a served name answers, which rest, and in what order to try them.

A gateway's served name may stand for several deployments (the same model on
other keys, regions or servers). This is the pool's bookkeeping, sans-I/O: the
shell passes the time in (``now``, its event loop's clock), so a test drives it
with a fake clock and every decision is a plain function of what happened.

- **Choice**: the healthy deployment with the fewest requests in flight for its
  weight (``in_flight / weight``); ties go to the fewest requests so far for its
  weight (sequential traffic spreads by weight too), then to the file's order.
- **Cooldown**: a failure another try may fix (`streamfn.core.stages._try_again.tries_again`:
  a 429, a 5xx, an overload, a timeout, a connection failure) rests that
  deployment for the upstream's Retry-After (up to `Cooldown.longest`) or
  `Cooldown.default` seconds. A name with a single deployment never rests: with
  nowhere else to send a request, the upstream's own answer (and Retry-After)
  is worth more than a guess.
- **Order of attempts**: the healthy deployments, chosen first then the others
  in choice order, each at most once; none when all rest (`Pool.wait` says for
  how long, the Retry-After of the refusal).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import urlsplit, urlunsplit

import msgspec

from .._events import Error, ErrorKind
from ..stages._try_again import TRY_AGAIN_KINDS, tries_again

__all__ = ["Cooldown", "Deployment", "DeploymentHealth", "Pool", "labels", "shown_url"]

T = TypeVar("T")

#: the failures that count against a deployment's health (its own, not the client's:
#: a bad request would fail anywhere); of these, `tries_again`'s rest it
_ITS_OWN = TRY_AGAIN_KINDS | {ErrorKind.AUTH, ErrorKind.PROTOCOL}


class Cooldown(msgspec.Struct, frozen=True, kw_only=True):
    """How long a failed deployment rests, in seconds."""

    #: when the upstream named no time (no Retry-After)
    default: float = 5.0
    #: the most a Retry-After may ask (an hour-long throttle would empty the pool)
    longest: float = 300.0

    def __post_init__(self) -> None:
        if not (self.default >= 0 and self.longest >= 0):
            raise ValueError(
                f"cooldown times must be 0 or more, got {self.default}, {self.longest}"
            )

    def after(self, error: Error) -> float:
        """The rest ``error`` earns."""
        asked = self.default if error.retry_after is None else max(0.0, error.retry_after)
        return min(asked, self.longest)


@dataclass(frozen=True)
class Deployment(Generic[T]):
    """One deployment of a served name: what the pool shows of it, and ``target`` (what
    the shell sends requests to, opaque here)."""

    label: str
    name: str
    model: str
    base_url: str
    weight: float
    target: T


class DeploymentHealth(msgspec.Struct, frozen=True, kw_only=True):
    """A deployment as operators see it (``/health``, metrics, the dashboard): no key,
    no key variable, a base URL without userinfo nor query."""

    deployment: str
    name: str
    model: str
    base_url: str
    weight: float
    in_flight: int
    requests: int
    failures: int
    #: seconds of rest left (0: healthy)
    cooling_for: float
    #: the `ErrorKind` of its last failure, if any
    last_error: str | None


@dataclass
class _State:
    in_flight: int = 0
    requests: int = 0
    failures: int = 0
    until: float = float("-inf")
    last_error: str | None = None


class Pool(Generic[T]):
    """The deployments of one served name and what happened to each."""

    def __init__(self, deployments: Sequence[Deployment[T]], cooldown: Cooldown) -> None:
        if not deployments:
            raise ValueError("a pool needs at least one deployment")
        self.deployments = tuple(deployments)
        self.cooldown = cooldown
        self._states = [_State() for _ in self.deployments]

    def healthy(self, index: int, now: float) -> bool:
        return self._states[index].until <= now

    def order(self, now: float) -> list[int]:
        """The deployments to try, first choice first: the healthy ones only."""
        healthy = [i for i in range(len(self.deployments)) if self.healthy(i, now)]
        return sorted(healthy, key=self._load)

    def _load(self, index: int) -> tuple[float, float, int]:
        state, weight = self._states[index], self.deployments[index].weight
        return (state.in_flight / weight, state.requests / weight, index)

    def wait(self, now: float) -> float:
        """Seconds until the first resting deployment is healthy again (0: one is now)."""
        return max(0.0, min(state.until for state in self._states) - now)

    def began(self, index: int) -> None:
        """A request went to ``index``."""
        state = self._states[index]
        state.in_flight += 1
        state.requests += 1

    def ended(self, index: int) -> None:
        """That request ended, however."""
        self._states[index].in_flight -= 1

    def failed(self, index: int, error: Error, now: float) -> bool:
        """``index`` answered ``error``; whether the request may move on to the next
        deployment (the error is one another try may fix). Such a failure rests the
        deployment, where the pool has another."""
        if error.kind not in _ITS_OWN:
            return False
        state = self._states[index]
        state.failures += 1
        state.last_error = str(error.kind)
        moves_on = tries_again(error)
        if moves_on and len(self.deployments) > 1:
            state.until = max(state.until, now + self.cooldown.after(error))
        return moves_on

    def health(self, now: float) -> list[DeploymentHealth]:
        return [
            DeploymentHealth(
                deployment=d.label,
                name=d.name,
                model=d.model,
                base_url=shown_url(d.base_url),
                weight=d.weight,
                in_flight=s.in_flight,
                requests=s.requests,
                failures=s.failures,
                cooling_for=max(0.0, s.until - now),
                last_error=s.last_error,
            )
            for d, s in zip(self.deployments, self._states, strict=True)
        ]


def labels(name: str, given: Sequence[str | None]) -> list[str]:
    """The names of ``name``'s deployments: each one's own (``given``), else ``name``
    for the first and ``name#2``, ``name#3`` ... for the others; `ValueError` when two
    are alike (their health records could not be told apart)."""
    chosen = [label or (name if i == 0 else f"{name}#{i + 1}") for i, label in enumerate(given)]
    for i, label in enumerate(chosen):
        if label in chosen[:i]:
            raise ValueError(f"deployment {i + 1} of {name!r}: {label!r} names another one too")
    return chosen


def shown_url(url: str) -> str:
    """``url`` without what may be a credential: userinfo, query and fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

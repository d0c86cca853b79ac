"""The gateway's deployment pool, sans-I/O: choice, cooldown and order on a fake clock."""

from __future__ import annotations

import pytest

from streamfn.core._events import Error
from streamfn.core.serve._deployments import Cooldown, Deployment, Pool, labels, shown_url


def _pool(*weights: float, cooldown: Cooldown | None = None) -> Pool[str]:
    deployments = [
        Deployment(f"d{i}", "fast", "openai:gpt-4o-mini", "https://up", w, f"t{i}")
        for i, w in enumerate(weights)
    ]
    return Pool(deployments, cooldown or Cooldown(default=5.0, longest=60.0))


def test_the_least_busy_deployment_is_chosen_and_weight_scales_busy() -> None:
    pool = _pool(1.0, 1.0)
    chosen = []
    for _ in range(4):  # all held open: each goes to the least busy
        first = pool.order(0.0)[0]
        pool.began(first)
        chosen.append(first)
    assert chosen == [0, 1, 0, 1]
    weighted = _pool(3.0, 1.0)
    for _ in range(4):
        weighted.began(weighted.order(0.0)[0])
    assert [h.in_flight for h in weighted.health(0.0)] == [3, 1]


def test_sequential_requests_spread_by_weight_too() -> None:
    pool = _pool(2.0, 1.0)
    for _ in range(6):
        first = pool.order(0.0)[0]
        pool.began(first)
        pool.ended(first)
    assert [h.requests for h in pool.health(0.0)] == [4, 2]


def test_a_failure_rests_a_deployment_for_its_retry_after_capped() -> None:
    pool = _pool(1.0, 1.0, cooldown=Cooldown(default=5.0, longest=60.0))
    assert pool.failed(0, Error.throttled("slow down", retry_after=30.0), now=100.0)
    assert pool.order(100.0) == [1] and pool.order(129.9) == [1]
    assert pool.order(130.0) == [0, 1]
    assert pool.failed(1, Error.throttled("slow down", retry_after=3600.0), now=200.0)
    assert pool.health(200.0)[1].cooling_for == 60.0  # the cap, not an hour


def test_a_failure_without_retry_after_rests_the_default_time() -> None:
    pool = _pool(1.0, 1.0)
    assert pool.failed(0, Error.network("reset"), now=10.0)
    assert pool.health(10.0)[0].cooling_for == 5.0
    assert pool.health(10.0)[0].last_error == "network"
    assert pool.order(14.9) == [1] and 0 in pool.order(15.0)


def test_all_resting_leaves_nothing_to_try_and_says_for_how_long() -> None:
    pool = _pool(1.0, 1.0)
    pool.failed(0, Error.network("down"), now=0.0)
    pool.failed(1, Error.throttled("slow", retry_after=2.0), now=1.0)
    assert pool.order(1.5) == []
    assert pool.wait(1.5) == pytest.approx(1.5)  # the second is back at 3.0


def test_a_single_deployment_never_rests() -> None:
    pool = _pool(1.0)
    assert pool.failed(0, Error.throttled("slow", retry_after=30.0), now=0.0)
    assert pool.order(0.0) == [0] and pool.health(0.0)[0].failures == 1


def test_a_failure_another_try_cannot_fix_neither_moves_on_nor_rests() -> None:
    pool = _pool(1.0, 1.0)
    assert not pool.failed(0, Error.invalid_request("bad field", status=400), now=0.0)
    assert pool.order(0.0) == [0, 1] and pool.health(0.0)[0].failures == 0
    assert not pool.failed(0, Error.auth("bad key", status=401), now=0.0)  # its own fault
    assert pool.order(0.0) == [0, 1] and pool.health(0.0)[0].failures == 1


def test_shown_urls_carry_no_credentials() -> None:
    assert (
        shown_url("https://user:pw@up.example:8443/v1?key=sk-1#x") == "https://up.example:8443/v1"
    )
    assert shown_url("http://[::1]:8000/v1") == "http://[::1]:8000/v1"


def test_deployments_are_named_apart() -> None:
    assert labels("fast", [None, None, "east"]) == ["fast", "fast#2", "east"]
    with pytest.raises(ValueError, match="names another one too"):
        labels("fast", ["east", "east"])
